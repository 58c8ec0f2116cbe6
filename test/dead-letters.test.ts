import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, pluginsDirWith, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { subscriberPool } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';
import { closedPort } from './helpers/ports.js';

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();
const subscriber = subscribers.start;
const extra: TestDaemon[] = [];

const publish = (workspace: string, eventKey: string, payload: Record<string, unknown> = {}, client: Api = admin) =>
  client.post(`/api/workspaces/${workspace}/events/publish`, { eventKey, payload });

async function deadLettersOf(client: Api, workspace: string): Promise<any[]> {
  return (await client.get(`/api/admin/dead-letters?workspaceId=${workspace}`)).body.data;
}

const waitForDeadLetters = (client: Api, workspace: string, count = 1) =>
  waitFor(`${count} dead letters in ${workspace}`, async () => {
    const letters = await deadLettersOf(client, workspace);
    return letters.length >= count && letters;
  });

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH, pluginsDir: await pluginsDirWith('recorder.mjs') });
  admin = await t.admin();
  await publishExtension(admin, 'crm');
  await publishExtension(admin, 'recorder');
});
test.after(async () => {
  await subscribers.closeAll();
  for (const daemon of extra) await daemon.destroy();
  await t.destroy();
});

test('5xx is retried on the schedule, then dead-lettered with the contract fields', async () => {
  const receiver = await subscriber(() => ({ status: 503 }));
  await workspaceWith(admin, 'ladder', 'crm');
  const { id: subscriptionId } = await subscribeExternal(admin, 'ladder', 'crm.deal.closed', 'crm', receiver.url);
  const eventId = (await publish('ladder', 'crm.deal.closed', { n: 1 })).body.meta.eventId;
  const [letter] = await waitForDeadLetters(admin, 'ladder');
  assert.equal(Object.keys(letter).sort(), [
    'attempts', 'deadAt', 'deliveryId', 'event', 'firstAttemptAt', 'id', 'lastError', 'replayCount', 'subscriber',
  ]);
  assert.is(letter.attempts, 4, 'one attempt plus one per entry of the 3-step schedule');
  assert.is(receiver.received.length, 4);
  assert.is(new Set(receiver.received.map((d) => d.headers['webhook-id'])).size, 1, 'webhook-id is stable across retries');
  assert.is(letter.deliveryId, receiver.received[0]!.headers['webhook-id']);
  assert.equal(letter.lastError, { message: 'subscriber answered HTTP 503', status: 503 });
  assert.equal(letter.subscriber, { subscriptionId, extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: receiver.url });
  assert.is(letter.event.id, eventId);
  assert.is(letter.replayCount, 0);
  assert.ok(Date.parse(letter.firstAttemptAt) <= Date.parse(letter.deadAt));
  assert.equal((await admin.get(`/api/admin/dead-letters/${letter.id}`)).body.data, letter);
  const status = (await admin.get('/api/admin/status')).body.data;
  assert.ok(status.deadLetters >= 1);
});

test('a 4xx other than 408 and 429 is dead-lettered at once; 408 is retried', async () => {
  for (const [workspace, status, attempts] of [
    ['gone', 410, 1],
    ['bad', 400, 1],
    ['slowpoke', 408, 4],
  ] as const) {
    const receiver = await subscriber(() => ({ status }));
    await workspaceWith(admin, workspace, 'crm');
    await subscribeExternal(admin, workspace, 'crm.deal.closed', 'crm', receiver.url);
    await publish(workspace, 'crm.deal.closed');
    const [letter] = await waitForDeadLetters(admin, workspace);
    assert.is(letter.attempts, attempts, `HTTP ${status}`);
    assert.is(letter.lastError.status, status);
  }
});

test('redirects are not followed: a 3xx is final', async () => {
  const elsewhere = await subscriber();
  const receiver = await subscriber(() => ({ status: 307, headers: { location: `${elsewhere.url}/events` } }));
  await workspaceWith(admin, 'redirected', 'crm');
  await subscribeExternal(admin, 'redirected', 'crm.deal.closed', 'crm', receiver.url);
  await publish('redirected', 'crm.deal.closed');
  const [letter] = await waitForDeadLetters(admin, 'redirected');
  assert.is(letter.lastError.status, 307);
  assert.is(letter.attempts, 1);
  assert.is(elsewhere.received.length, 0);
});

test('network errors and timeouts are retried, then dead-lettered with the reason', async () => {
  const hanging = await subscriber(() => ({ hang: true }));
  const daemon = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [5], deliveryTimeoutMs: 100 } });
  extra.push(daemon);
  const other = await daemon.admin();
  await publishExtension(other, 'crm');
  await workspaceWith(other, 'timeouts', 'crm');
  await subscribeExternal(other, 'timeouts', 'crm.deal.closed', 'crm', hanging.url);
  await workspaceWith(other, 'refused', 'crm');
  await subscribeExternal(other, 'refused', 'crm.deal.closed', 'crm', `http://127.0.0.1:${await closedPort()}`);
  await publish('timeouts', 'crm.deal.closed', {}, other);
  await publish('refused', 'crm.deal.closed', {}, other);
  const [timedOut] = await waitForDeadLetters(other, 'timeouts');
  assert.equal(timedOut.lastError, { message: 'no answer within 100 ms', status: null });
  assert.is(timedOut.attempts, 2);
  assert.is(hanging.received.length, 2);
  const [refused] = await waitForDeadLetters(other, 'refused');
  assert.equal(refused.lastError, { message: 'network error: ECONNREFUSED', status: null });
});

test('429 honours Retry-After: 0 retries at once whatever the schedule, 3600 waits an hour', async () => {
  const daemon = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [3_600_000, 5] } });
  extra.push(daemon);
  const other = await daemon.admin();
  await publishExtension(other, 'crm');
  const eager = await subscriber((_, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '0' } } : { status: 200 }));
  await workspaceWith(other, 'eager', 'crm');
  await subscribeExternal(other, 'eager', 'crm.deal.closed', 'crm', eager.url);
  await publish('eager', 'crm.deal.closed', {}, other);
  await eager.waitForCount(2);

  const patient = await subscriber(() => ({ status: 429, headers: { 'retry-after': '3600' } }));
  await workspaceWith(other, 'patient', 'crm');
  await subscribeExternal(other, 'patient', 'crm.deal.closed', 'crm', patient.url);
  const before = Date.now();
  await publish('patient', 'crm.deal.closed', {}, other);
  await patient.waitForCount(1);
  const retry = await waitFor('the rescheduled attempt on record', async () => {
    const [record] = (await other.get('/api/workspaces/patient/deliveries')).body.data;
    return record?.attempts.length === 1 && record.nextAttemptAt ? { nextAttemptAt: Date.parse(record.nextAttemptAt) } : null;
  });
  const delay = retry.nextAttemptAt - before;
  assert.ok(delay >= 3_590_000 && delay <= 3_610_000, `next attempt in ${delay} ms`);
  // The eager delivery leaves the outbox once its record is written (within 100 ms); the patient one stays.
  const pending = async () => (await other.get('/api/admin/status')).body.data.pendingDeliveries;
  await waitFor('the eager delivery done, the patient one still pending', async () => (await pending()) === 1);
});

test("the status counts a dead letter once it is listed, and stops counting it once it is discarded or replayed", async () => {
  // A daemon of its own: the count is the whole daemon's, and this file's other deliveries would move it.
  const daemon = await startTestDaemon({ dispatch: FAST_DISPATCH });
  extra.push(daemon);
  const own = await daemon.admin();
  const receiver = await subscriber(() => ({ status: 400 }));
  await publishExtension(own, 'crm');
  await workspaceWith(own, 'counted', 'crm');
  await subscribeExternal(own, 'counted', 'crm.deal.closed', 'crm', receiver.url);
  const counted = async () => (await own.get('/api/admin/status')).body.data.deadLetters;

  await publish('counted', 'crm.deal.closed', {}, own);
  await waitForDeadLetters(own, 'counted', 1);
  assert.is(await counted(), 1);
  // Right after the first, as a console re-reading the status on each stream item would.
  await publish('counted', 'crm.deal.closed', {}, own);
  const [newest, oldest] = await waitForDeadLetters(own, 'counted', 2);
  assert.is(await counted(), 2, 'the second dead letter is counted as soon as it is listed');
  assert.is((await own.delete(`/api/admin/dead-letters/${newest.id}`)).status, 204);
  assert.is(await counted(), 1, 'a discarded dead letter is no longer counted');
  receiver.answer(() => ({ status: 200 }));
  assert.is((await own.post(`/api/admin/dead-letters/${oldest.id}/replay`)).status, 202);
  assert.is(await counted(), 0, 'a replayed dead letter is no longer counted');
});

test('replay one: 202, delivered to that one subscriber, and gone from the dead letters', async () => {
  const receiver = await subscriber(() => ({ status: 500 }));
  const bystander = await subscriber();
  await workspaceWith(admin, 'replay-one', 'crm');
  await subscribeExternal(admin, 'replay-one', 'crm.deal.closed', 'crm', receiver.url);
  await publish('replay-one', 'crm.deal.closed');
  const [letter] = await waitForDeadLetters(admin, 'replay-one');
  await subscribeExternal(admin, 'replay-one', 'crm.deal.closed', 'crm', bystander.url);
  receiver.answer(() => ({ status: 200 }));
  const replay = await admin.post(`/api/admin/dead-letters/${letter.id}/replay`);
  assert.is(replay.status, 202);
  await receiver.waitForCount(5);
  assert.is(receiver.received[4]!.headers['webhook-id'], letter.deliveryId);
  assert.is(bystander.received.length, 0, 'only the dead letter subscriber is sent the event again');
  await waitFor('the dead letter to be gone', async () => (await deadLettersOf(admin, 'replay-one')).length === 0);
  assert.is((await admin.get(`/api/admin/dead-letters/${letter.id}`)).status, 404);
  assert.is((await admin.post(`/api/admin/dead-letters/${letter.id}/replay`)).status, 404);
});

test('a replay that fails again comes back under its id, with replayCount + 1 and a fresh attempt count', async () => {
  const receiver = await subscriber(() => ({ status: 502 }));
  await workspaceWith(admin, 'again', 'crm');
  await subscribeExternal(admin, 'again', 'crm.deal.closed', 'crm', receiver.url);
  await publish('again', 'crm.deal.closed');
  const [first] = await waitForDeadLetters(admin, 'again');
  await admin.post(`/api/admin/dead-letters/${first.id}/replay`);
  await receiver.waitForCount(8);
  const [second] = await waitFor('the dead letter to come back', async () => {
    const letters = await deadLettersOf(admin, 'again');
    return letters.length === 1 && letters[0].replayCount === 1 && letters;
  });
  assert.is(second.id, first.id);
  assert.equal((await admin.get(`/api/admin/dead-letters/${first.id}/state`)).body.data, { state: 'dead' });
  assert.is(second.replayCount, 1);
  assert.is(second.attempts, 4);
  assert.is(second.deliveryId, first.deliveryId);
  assert.is(second.event.id, first.event.id);
});

test('replay by filter answers {replayed} and skips subscribers that are gone or disabled (409 for one)', async () => {
  const receiver = await subscriber(() => ({ status: 500 }));
  await workspaceWith(admin, 'bulk', 'crm');
  await subscribeExternal(admin, 'bulk', 'crm.deal.closed', 'crm', receiver.url);
  for (let i = 0; i < 3; i += 1) await publish('bulk', 'crm.deal.closed', { i });
  const letters = await waitForDeadLetters(admin, 'bulk', 3);

  await admin.patch('/api/workspaces/bulk/extensions/crm', { enabled: false });
  const refused = await admin.post(`/api/admin/dead-letters/${letters[0].id}/replay`);
  assert.is(refused.status, 409);
  assert.match(refused.body.message ?? '', 'extension disabled');
  const none = await admin.post('/api/admin/dead-letters/replay', { workspaceId: 'bulk' });
  assert.equal(none.body.data, { replayed: 0, skipped: 3 });

  await admin.patch('/api/workspaces/bulk/extensions/crm', { enabled: true });
  receiver.answer(() => ({ status: 200 }));
  const other = await admin.post('/api/admin/dead-letters/replay', { workspaceId: 'bulk', eventKey: 'crm.other' });
  assert.equal(other.body.data, { replayed: 0, skipped: 0 });
  const two = await admin.post('/api/admin/dead-letters/replay', { workspaceId: 'bulk', limit: 2 });
  assert.is(two.status, 202);
  assert.equal(two.body.data, { replayed: 2, skipped: 0 });
  const rest = await admin.post('/api/admin/dead-letters/replay', { workspaceId: 'bulk' });
  assert.equal(rest.body.data, { replayed: 1, skipped: 0 });
  await waitFor('every replay delivered', async () => (await admin.get('/api/admin/status')).body.data.pendingDeliveries === 0);
  assert.equal(await deadLettersOf(admin, 'bulk'), []);
});

test('list filters and pages; discard deletes; only an ADMIN sees dead letters', async () => {
  const receiver = await subscriber(() => ({ status: 400 }));
  await workspaceWith(admin, 'listed', 'crm');
  await subscribeExternal(admin, 'listed', 'crm.deal.closed', 'crm', receiver.url);
  await subscribeExternal(admin, 'listed', 'crm.deal.won', 'crm', receiver.url);
  for (const key of ['crm.deal.closed', 'crm.deal.won', 'crm.deal.closed']) await publish('listed', key);
  await waitForDeadLetters(admin, 'listed', 3);
  const page = await admin.get('/api/admin/dead-letters?workspaceId=listed&limit=2&offset=1');
  assert.equal(page.body.meta, { total: 3, limit: 2, offset: 1 });
  assert.is(page.body.data.length, 2);
  const byKey = await admin.get('/api/admin/dead-letters?workspaceId=listed&eventKey=crm.deal.won');
  assert.is(byKey.body.meta.total, 1);
  const byExtension = await admin.get('/api/admin/dead-letters?workspaceId=listed&extensionKey=recorder');
  assert.is(byExtension.body.meta.total, 0);
  const newestFirst = (await admin.get('/api/admin/dead-letters?workspaceId=listed')).body.data;
  assert.ok(newestFirst[0].deadAt >= newestFirst[2].deadAt);

  assert.is((await admin.delete(`/api/admin/dead-letters/${newestFirst[0].id}`)).status, 204);
  assert.is((await admin.delete(`/api/admin/dead-letters/${newestFirst[0].id}`)).status, 404);
  assert.is((await admin.get('/api/admin/dead-letters?workspaceId=listed')).body.meta.total, 2);
  assert.is((await admin.get('/api/admin/dead-letters/not-a-uuid')).status, 400);
  assert.is((await admin.get('/api/admin/dead-letters?limit=501')).status, 400);
  const user = await createUser(t, 'dlq-reader@example.test');
  assert.is((await user.get('/api/admin/dead-letters')).status, 403);
  assert.is((await user.post('/api/admin/dead-letters/discard', {})).status, 403);

  const typo = await admin.get('/api/admin/dead-letters?workspaceId=nosuch');
  assert.is(typo.status, 404, 'an unknown workspace filter is a typo, not an empty list');
  assert.is(typo.body.message, 'workspace nosuch not found');
  assert.is((await admin.get('/api/admin/dead-letters?extensionKey=nosuch')).status, 404);
  assert.is((await admin.post('/api/admin/dead-letters/replay', { workspaceId: 'nosuch' })).status, 404);
  assert.is((await admin.post('/api/admin/dead-letters/discard', { workspaceId: 'nosuch' })).status, 404);

  const discarded = await admin.post('/api/admin/dead-letters/discard', { workspaceId: 'listed', eventKey: 'crm.deal.won' });
  assert.is(discarded.status, 200);
  assert.equal(discarded.body.data, { discarded: 1 });
  assert.is((await admin.get('/api/admin/dead-letters?workspaceId=listed')).body.meta.total, 1);
  assert.equal((await admin.post('/api/admin/dead-letters/discard', { workspaceId: 'listed' })).body.data, { discarded: 1 });
  assert.is((await admin.get('/api/admin/dead-letters?workspaceId=listed')).body.meta.total, 0);
  assert.equal((await admin.get(`/api/admin/dead-letters/${newestFirst[0].id}/state`)).body.data, { state: 'gone' });
});

test('in-process: a throwing synchronous handler is dead-lettered at once, the publish still succeeds', async () => {
  await workspaceWith(admin, 'sync-fail', 'recorder');
  await admin.post('/api/workspaces/sync-fail/subscriptions', { eventKey: 'fail.sync', extensionKey: 'recorder', kind: 'IN_PROCESS' });
  const result = await publish('sync-fail', 'fail.sync');
  assert.is(result.status, 200);
  const [letter] = await deadLettersOf(admin, 'sync-fail');
  assert.ok(letter, 'dead-lettered before the publish was answered');
  assert.is(letter.attempts, 1);
  assert.equal(letter.lastError, { message: 'handler failed: sync handler exploded', status: null });
  assert.equal(letter.subscriber, { subscriptionId: letter.subscriber.subscriptionId, extensionKey: 'recorder', kind: 'IN_PROCESS', serviceBaseUrl: null });
});

test('in-process: a throwing asynchronous handler is retried like an external one; a hanging one times out', async () => {
  const daemon = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, handlerTimeoutMs: 50 }, pluginsDir: await pluginsDirWith('recorder.mjs') });
  extra.push(daemon);
  const other = await daemon.admin();
  await publishExtension(other, 'recorder');
  await workspaceWith(other, 'async-fail', 'recorder');
  for (const eventKey of ['fail.async', 'hang.async']) {
    await other.post('/api/workspaces/async-fail/subscriptions', { eventKey, extensionKey: 'recorder', kind: 'IN_PROCESS' });
  }
  await publish('async-fail', 'fail.async', {}, other);
  await publish('async-fail', 'hang.async', {}, other);
  const letters = await waitForDeadLetters(other, 'async-fail', 2);
  const failed = letters.find((letter) => letter.event.eventKey === 'fail.async');
  const hung = letters.find((letter) => letter.event.eventKey === 'hang.async');
  assert.is(failed.attempts, 4);
  assert.is(failed.lastError.message, 'handler failed: async handler exploded');
  assert.is(hung.attempts, 4);
  assert.is(hung.lastError.message, 'handler failed: did not finish within 50 ms');
});

test('event chains are cut at depth 8 and the cut is a dead letter', async () => {
  await workspaceWith(admin, 'loop', 'recorder');
  await admin.post('/api/workspaces/loop/subscriptions', { eventKey: 'loop.ping', extensionKey: 'recorder', kind: 'IN_PROCESS' });
  assert.is((await publish('loop', 'loop.ping', { hop: 0 })).status, 200);
  const events = (await admin.get('/api/workspaces/loop/events')).body.data;
  assert.is(events.length, 8, 'the published event and 7 links of the chain');
  assert.equal(events.map((e: { payload: { hop: number } }) => e.payload.hop), [7, 6, 5, 4, 3, 2, 1, 0]);
  const letters = await deadLettersOf(admin, 'loop');
  assert.is(letters.length, 1);
  assert.is(letters[0].event.payload.hop, 7);
  assert.is(letters[0].lastError.message, 'event chain cut at depth 8: recorder tried to publish loop.ping');
});

test('dead letters survive a restart and can be replayed after it', async () => {
  const receiver = await subscriber(() => ({ status: 400 }));
  await workspaceWith(admin, 'lasting', 'crm');
  await subscribeExternal(admin, 'lasting', 'crm.deal.closed', 'crm', receiver.url);
  await publish('lasting', 'crm.deal.closed');
  const [letter] = await waitForDeadLetters(admin, 'lasting');
  t = await t.restart();
  admin = await t.admin();
  assert.equal((await admin.get(`/api/admin/dead-letters/${letter.id}`)).body.data, letter);
  receiver.answer(() => ({ status: 200 }));
  assert.is((await admin.post(`/api/admin/dead-letters/${letter.id}/replay`)).status, 202);
  await receiver.waitForCount(2);
});

test.run();
