import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, install, pluginsDirWith, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { api, type Api } from './helpers/http.js';
import { hasValidSignature, subscriberPool, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

/**
 * Sending a delivery again (`POST …/deliveries/{deliveryId}/redeliver`), on
 * the backend of the run: a new delivery of the same event to the same
 * subscriber, through the outbox like any other.
 */

let t: TestDaemon;
let admin: Api & { token: string };
const subscribers = subscriberPool();

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH, pluginsDir: await pluginsDirWith('recorder.mjs') });
  admin = await t.admin();
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

const redeliver = (client: Api, workspace: string, deliveryId: string) => client.post(`/api/workspaces/${workspace}/deliveries/${deliveryId}/redeliver`);

async function deliveriesOf(client: Api, workspace: string, eventId: string): Promise<any[]> {
  const shown = await client.get(`/api/workspaces/${workspace}/events/${eventId}`);
  assert.is(shown.status, 200, shown.text);
  return shown.body.data.deliveries;
}

/** The record of `deliveryId` once it is no longer PENDING. */
const settled = (client: Api, workspace: string, eventId: string, deliveryId: string) =>
  waitFor(`delivery ${deliveryId} settled`, async () => {
    const record = (await deliveriesOf(client, workspace, eventId)).find((delivery) => delivery.id === deliveryId);
    return record && record.status !== 'PENDING' && record;
  });

/** A workspace subscribed to `crm.deal.closed` at `receiver`, with one event published and its delivery settled. */
async function deliveredOnce(workspace: string, receiver: Subscriber, client: Api = admin) {
  await workspaceWith(admin, workspace, 'crm');
  const subscription = await subscribeExternal(admin, workspace, 'crm.deal.closed', 'crm', receiver.url);
  const eventId: string = (await admin.post(`/api/workspaces/${workspace}/events/publish`, { eventKey: 'crm.deal.closed', payload: { n: 1 } })).body.meta.eventId;
  const [delivery] = await waitFor(`the delivery of ${eventId}`, async () => {
    const records = await deliveriesOf(client, workspace, eventId);
    return records.length === 1 && records[0].status !== 'PENDING' && records;
  });
  return { subscription, eventId, original: delivery };
}

test('a SUCCEEDED delivery is sent again as a new delivery, signed under its own webhook-id, recording what it redelivers', async () => {
  const receiver = await subscribers.start();
  const { subscription, eventId, original } = await deliveredOnce('again', receiver);
  assert.is(original.status, 'SUCCEEDED');
  assert.not.ok('redeliveryOf' in original, 'a delivery a publish made names none');

  const answered = await redeliver(admin, 'again', original.id);
  assert.is(answered.status, 202, answered.text);
  const { deliveryId } = answered.body.data;
  assert.equal(Object.keys(answered.body.data), ['deliveryId']);
  assert.is.not(deliveryId, original.id);

  const [first, second] = await receiver.waitForCount(2);
  assert.is(second!.headers['webhook-id'], deliveryId);
  assert.is.not(second!.headers['webhook-id'], first!.headers['webhook-id']);
  assert.is(second!.body, first!.body, 'the same event, byte for byte');
  assert.ok(hasValidSignature(second!, subscription.signingSecret));

  const record = await settled(admin, 'again', eventId, deliveryId);
  assert.is(record.status, 'SUCCEEDED');
  assert.is(record.redeliveryOf, original.id);
  assert.is(record.subscriptionId, subscription.id);
  assert.is(record.attempts.length, 1);
  assert.equal((await admin.get(`/api/workspaces/again/deliveries/${deliveryId}`)).body.data, record, 'one record is read by its id');
  assert.equal((await admin.get(`/api/workspaces/again/deliveries/${original.id}`)).body.data.status, 'SUCCEEDED');
  const listed = (await admin.get(`/api/workspaces/again/deliveries?subscriptionId=${subscription.id}`)).body.data;
  assert.equal(listed.map((delivery: any) => [delivery.id, delivery.redeliveryOf]), [[deliveryId, original.id], [original.id, undefined]]);
});

test('a DEAD delivery is sent again with the normal retries; it is dead-lettered again if it fails to the end', async () => {
  const receiver = await subscribers.start(() => ({ status: 503 }));
  const { eventId, original } = await deliveredOnce('dead', receiver);
  assert.is(original.status, 'DEAD');

  receiver.answer((_request, index) => ({ status: index < 5 ? 503 : 200 }));
  const { deliveryId } = (await redeliver(admin, 'dead', original.id)).body.data;
  const record = await settled(admin, 'dead', eventId, deliveryId);
  assert.is(record.status, 'SUCCEEDED');
  assert.equal(record.attempts.map((attempt: any) => attempt.outcome), ['RETRY', 'SUCCESS'], 'retried on the schedule');
  assert.is(record.redeliveryOf, original.id);

  receiver.answer(() => ({ status: 503 }));
  const failing = (await redeliver(admin, 'dead', deliveryId)).body.data.deliveryId;
  const dead = await settled(admin, 'dead', eventId, failing);
  assert.is(dead.status, 'DEAD');
  assert.is(dead.attempts.length, 4, 'one attempt plus the 3-step schedule');
  assert.is(dead.redeliveryOf, deliveryId, 'a redelivery of a redelivery names the one it sends again');
  const letters = (await admin.get('/api/admin/dead-letters?workspaceId=dead')).body.data;
  const letter = letters.find((one: any) => one.deliveryId === failing);
  assert.ok(letter);

  assert.is((await admin.delete(`/api/admin/dead-letters/${letter.id}`)).status, 204);
  assert.is((await settled(admin, 'dead', eventId, failing)).status, 'DISCARDED');
  receiver.answer(() => ({ status: 200 }));
  const fromDiscarded = (await redeliver(admin, 'dead', failing)).body.data.deliveryId;
  assert.is((await settled(admin, 'dead', eventId, fromDiscarded)).status, 'SUCCEEDED', 'a DISCARDED delivery is sent again too');
});

test('a delivery to an in-process plugin is run again by its handler', async () => {
  const calls = ((globalThis as { __recorderCalls?: Array<{ eventId: string }> }).__recorderCalls ??= []);
  await publishExtension(admin, 'recorder');
  await workspaceWith(admin, 'plugged', 'crm');
  await install(admin, 'plugged', 'recorder');
  const subscribed = await admin.post('/api/workspaces/plugged/subscriptions', { eventKey: 'crm.deal.lost', extensionKey: 'recorder', kind: 'IN_PROCESS' });
  assert.is(subscribed.status, 201, subscribed.text);
  const eventId = (await admin.post('/api/workspaces/plugged/events/publish', { eventKey: 'crm.deal.lost' })).body.meta.eventId;
  const [original] = await deliveriesOf(admin, 'plugged', eventId);
  assert.is(original.status, 'SUCCEEDED', 'a synchronous handler ran before the publisher was answered');

  const { deliveryId } = (await redeliver(admin, 'plugged', original.id)).body.data;
  const record = await settled(admin, 'plugged', eventId, deliveryId);
  assert.equal([record.status, record.kind, record.subscriptionId, record.redeliveryOf], ['SUCCEEDED', 'IN_PROCESS', subscribed.body.data.id, original.id]);
  assert.is(calls.filter((call) => call.eventId === eventId).length, 2);
});

test('404 for an unknown delivery or another workspace’s; 409 for a disabled subscription; none of them queues anything', async () => {
  const receiver = await subscribers.start();
  const { subscription, eventId, original } = await deliveredOnce('refused', receiver);
  await workspaceWith(admin, 'elsewhere', 'crm');

  const unknown = await redeliver(admin, 'refused', 'msg_00000000000000000000000000000000');
  assert.is(unknown.status, 404, unknown.text);
  assert.is(unknown.body.code, 'NOT_FOUND');
  assert.is((await admin.get(`/api/workspaces/elsewhere/deliveries/${original.id}`)).status, 404);
  const foreign = await redeliver(admin, 'elsewhere', original.id);
  assert.is(foreign.status, 404, 'a delivery is found in its own workspace only');
  assert.is((await redeliver(admin, 'nowhere', original.id)).status, 404);
  assert.is((await redeliver(admin, 'refused', 'not a delivery!')).status, 400);

  assert.is((await admin.patch(`/api/workspaces/refused/subscriptions/${subscription.id}`, { enabled: false })).status, 200);
  const disabled = await redeliver(admin, 'refused', original.id);
  assert.is(disabled.status, 409, disabled.text);
  assert.is(disabled.body.code, 'CONFLICT');
  assert.match(disabled.body.message!, /subscription disabled/);

  assert.is((await admin.delete(`/api/workspaces/refused/subscriptions/${subscription.id}`)).status, 204);
  const deleted = await redeliver(admin, 'refused', original.id);
  assert.is(deleted.status, 409, deleted.text);
  assert.match(deleted.body.message!, /subscription deleted/);

  assert.equal((await deliveriesOf(admin, 'refused', eventId)).map((delivery) => delivery.id), [original.id], 'nothing was queued');
  assert.is(receiver.received.length, 1);
});

test('only an ADMIN may redeliver; a token needs dead-letters:write', async () => {
  const receiver = await subscribers.start();
  const { eventId, original } = await deliveredOnce('gated', receiver);
  const member = await createUser(t, 'member@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/gated/members/${member.id}`)).status, 200);

  const byMember = await redeliver(member, 'gated', original.id);
  assert.is(byMember.status, 403, byMember.text);
  assert.is(byMember.body.code, 'FORBIDDEN');

  const tokenWith = async (scopes: string[]) => api(t.url, (await admin.post('/api/auth/tokens', { name: 'ops', scopes })).body.data.token);
  const reader = await redeliver(await tokenWith(['deliveries:read', 'events:read']), 'gated', original.id);
  assert.is(reader.status, 403, reader.text);
  assert.is(reader.body.meta.requiredScope, 'dead-letters:write');
  assert.equal((await deliveriesOf(admin, 'gated', eventId)).length, 1, 'a refused caller queues nothing');

  const operator = await redeliver(await tokenWith(['dead-letters:write']), 'gated', original.id);
  assert.is(operator.status, 202, operator.text);
  await settled(admin, 'gated', eventId, operator.body.data.deliveryId);
  assert.is(receiver.received.length, 2);
});

test('a redelivery still pending when the daemon stops is sent after it starts again, still naming what it redelivers', async () => {
  const own = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [200, 200, 200, 200, 200, 200, 200, 200, 200, 200] } });
  let daemon = own;
  try {
    const ownAdmin = await own.admin();
    const receiver = await subscribers.start();
    await workspaceWith(ownAdmin, 'durable', 'crm');
    await subscribeExternal(ownAdmin, 'durable', 'crm.deal.closed', 'crm', receiver.url);
    const eventId = (await ownAdmin.post('/api/workspaces/durable/events/publish', { eventKey: 'crm.deal.closed' })).body.meta.eventId;
    const original = await waitFor('the first delivery', async () => {
      const [record] = await deliveriesOf(ownAdmin, 'durable', eventId);
      return record?.status === 'SUCCEEDED' && record;
    });

    receiver.answer(() => ({ status: 503 }));
    const { deliveryId } = (await redeliver(ownAdmin, 'durable', original.id)).body.data;
    await waitFor('a failed attempt of the redelivery', () => receiver.received.some((request) => request.headers['webhook-id'] === deliveryId));
    daemon = await own.restart();
    receiver.answer(() => ({ status: 200 }));

    const record = await settled(await daemon.admin(), 'durable', eventId, deliveryId);
    assert.is(record.status, 'SUCCEEDED');
    assert.is(record.redeliveryOf, original.id);
    assert.is(record.attempts.at(-1).outcome, 'SUCCESS');
    assert.ok(receiver.received.filter((request) => request.headers['webhook-id'] === deliveryId).length >= 2);
  } finally {
    await daemon.destroy();
  }
});

test.run();
