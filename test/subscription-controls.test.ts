import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, pluginsDirWith, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { openStream } from './helpers/streams.js';
import { hasValidSignature, subscriberPool } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api & { token: string };
const subscribers = subscriberPool();
const subscriber = subscribers.start;

const publish = async (workspace: string, eventKey: string, payload: Record<string, unknown> = {}) => {
  const result = await admin.post(`/api/workspaces/${workspace}/events/publish`, { eventKey, payload });
  assert.is(result.status, 200, result.text);
  return result.body.meta.eventId as string;
};
const subscription = async (workspace: string, id: string) =>
  ((await admin.get(`/api/workspaces/${workspace}/subscriptions`)).body.data as any[]).find((s) => s.id === id);

test.before(async () => {
  // Disabling after 300 ms of failures, and a rotation overlap of 60 s: the schedule in milliseconds.
  t = await startTestDaemon({
    dispatch: { ...FAST_DISPATCH, retrySchedule: [40, 40, 40, 40, 40, 40, 40, 40, 40, 40] },
    subscriptions: { secretOverlapMs: 60_000, disableAfterMs: 300 },
    pluginsDir: await pluginsDirWith('recorder.mjs'),
  });
  admin = await t.admin();
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

test('a disabled subscription gets no new deliveries; enabling it again does', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'toggled', 'crm');
  const { id } = await subscribeExternal(admin, 'toggled', 'crm.deal.closed', 'crm', receiver.url);
  const disabled = await admin.patch(`/api/workspaces/toggled/subscriptions/${id}`, { enabled: false });
  assert.is(disabled.status, 200, disabled.text);
  assert.is(disabled.body.data.enabled, false);
  assert.is(disabled.body.data.disabledReason, 'disabled by an administrator');
  const skipped = await publish('toggled', 'crm.deal.closed', { n: 1 });
  assert.equal((await admin.get(`/api/workspaces/toggled/events/${skipped}`)).body.data.deliveries, []);

  const enabled = await admin.patch(`/api/workspaces/toggled/subscriptions/${id}`, { enabled: true });
  assert.equal([enabled.body.data.enabled, enabled.body.data.disabledReason], [true, null]);
  const delivered = await publish('toggled', 'crm.deal.closed', { n: 2 });
  await receiver.waitForCount(1);
  assert.is(receiver.received[0]!.json.id, delivered);
  assert.is(receiver.received.length, 1);
});

test('a new serviceBaseUrl with credentials is stored sealed and shown masked', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'moved', 'crm');
  const { id } = await subscribeExternal(admin, 'moved', 'crm.deal.closed', 'crm', 'http://127.0.0.1:9');
  const url = receiver.url.replace('http://', 'http://user:s3cret-pass@');
  const moved = await admin.patch(`/api/workspaces/moved/subscriptions/${id}`, { serviceBaseUrl: url });
  assert.is(moved.status, 200, moved.text);
  assert.not.match(moved.text, 's3cret-pass');
  assert.match(moved.body.data.serviceBaseUrl, '****@');
  await publish('moved', 'crm.deal.closed');
  const [received] = await receiver.waitForCount(1);
  assert.ok(received, 'delivered to the new URL');
  assert.not.match(JSON.stringify((await admin.get('/api/workspaces/moved/subscriptions')).body), 's3cret-pass');
});

test('after rotate-secret every delivery verifies under the old and the new secret', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'rotated', 'crm');
  const { id, signingSecret: old } = await subscribeExternal(admin, 'rotated', 'crm.deal.closed', 'crm', receiver.url);
  const rotated = await admin.post(`/api/workspaces/rotated/subscriptions/${id}/rotate-secret`);
  assert.is(rotated.status, 200, rotated.text);
  const fresh = rotated.body.data.signingSecret as string;
  assert.match(fresh, /^whsec_/);
  assert.is.not(fresh, old);
  await publish('rotated', 'crm.deal.closed');
  const [received] = await receiver.waitForCount(1);
  assert.is(String(received!.headers['webhook-signature']).split(' ').length, 2);
  assert.ok(hasValidSignature(received!, fresh), 'verifies under the new secret');
  assert.ok(hasValidSignature(received!, old), 'verifies under the old secret');
  assert.not.match(JSON.stringify((await admin.get('/api/workspaces/rotated/subscriptions')).body), fresh.slice(6));
});

/** platform_events_published_total, read from /metrics. */
async function eventsPublished(): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } })).text();
  return Number(/^platform_events_published_total (\d+)$/m.exec(text)?.[1]);
}

test('test sends a platform.test event to that subscription only, and answers 202 {deliveryId}; the event is recorded, counted and streamed like a published one', async () => {
  const target = await subscriber();
  const other = await subscriber();
  await workspaceWith(admin, 'tested', 'crm');
  const { id } = await subscribeExternal(admin, 'tested', 'crm.deal.closed', 'crm', target.url);
  await subscribeExternal(admin, 'tested', 'platform.test', 'crm', other.url);
  const stream = await openStream(t.url, '/api/workspaces/tested/stream', admin.token);
  const countedBefore = await eventsPublished();
  try {
    const sent = await admin.post(`/api/workspaces/tested/subscriptions/${id}/test`, { payload: { hello: 'world' } });
    assert.is(sent.status, 202, sent.text);
    const [received] = await target.waitForCount(1);
    assert.is(received!.headers['webhook-id'], sent.body.data.deliveryId);
    assert.equal([received!.json.eventKey, received!.json.publishedBy, received!.json.payload], ['platform.test', 'platform', { hello: 'world' }]);
    const listed = (await admin.get(`/api/workspaces/tested/deliveries?eventKey=platform.test`)).body.data as any[];
    assert.equal(listed.map((d) => d.id), [sent.body.data.deliveryId]);
    assert.is(other.received.length, 0, 'no other subscriber gets it');

    const events = (await admin.get('/api/workspaces/tested/events')).body.data as any[];
    assert.equal(events.map((event) => event.id), [received!.json.id], 'in the event log');
    assert.is(await eventsPublished(), countedBefore + 1, 'counted as published');
    const shown = await waitFor('the event on the live stream', () => stream.items.find((item) => item.event === 'event.published'));
    assert.is(shown.data.id, received!.json.id);
  } finally {
    stream.close();
  }
});

test('failing without one success for PLATFORM_DISABLE_AFTER disables with a reason and publishes platform.subscription.disabled', async () => {
  const failing = await subscriber(() => ({ status: 500 }));
  const watcher = await subscriber();
  await workspaceWith(admin, 'failing', 'crm');
  const { id } = await subscribeExternal(admin, 'failing', 'crm.deal.closed', 'crm', failing.url);
  await subscribeExternal(admin, 'failing', 'platform.subscription.disabled', 'crm', watcher.url);
  await publish('failing', 'crm.deal.closed');
  const disabled = await waitFor('the subscription disabled', async () => {
    const shown = await subscription('failing', id);
    return shown.enabled === false && shown;
  });
  assert.match(disabled.disabledReason, 'every delivery failed since');
  const [notice] = await watcher.waitForCount(1);
  assert.equal(
    [notice!.json.eventKey, notice!.json.publishedBy, notice!.json.payload.subscriptionId],
    ['platform.subscription.disabled', 'platform', id],
  );
  await admin.patch(`/api/workspaces/failing/subscriptions/${id}`, { enabled: true });
  const enabled = await subscription('failing', id);
  assert.equal([enabled.enabled, enabled.disabledReason], [true, null]);
});

test('bad input: 404 for unknown workspace or subscription, 400 for empty changes, 403 for non-admins', async () => {
  await workspaceWith(admin, 'refused', 'crm');
  const { id } = await subscribeExternal(admin, 'refused', 'crm.deal.closed', 'crm', 'http://127.0.0.1:9');
  const missing = '00000000-0000-4000-8000-000000000000';
  assert.is((await admin.patch(`/api/workspaces/nowhere/subscriptions/${id}`, { enabled: true })).status, 404);
  assert.is((await admin.patch(`/api/workspaces/refused/subscriptions/${missing}`, { enabled: true })).status, 404);
  assert.is((await admin.post(`/api/workspaces/refused/subscriptions/${missing}/rotate-secret`)).status, 404);
  assert.is((await admin.post(`/api/workspaces/refused/subscriptions/${missing}/test`, {})).status, 404);
  const empty = await admin.patch(`/api/workspaces/refused/subscriptions/${id}`, {});
  assert.is(empty.status, 400);
  assert.is(empty.body.code, 'VALIDATION_ERROR');
  const user = await createUser(t, 'member@example.test');
  assert.is((await user.patch(`/api/workspaces/refused/subscriptions/${id}`, { enabled: false })).status, 403);
  assert.is((await user.post(`/api/workspaces/refused/subscriptions/${id}/rotate-secret`)).status, 403);
  assert.is((await subscription('refused', id)).enabled, true, 'nothing changed');
});

test.run();
