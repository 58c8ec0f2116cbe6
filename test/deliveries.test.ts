import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { subscriberPool } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();
const subscriber = subscribers.start;

const publish = async (workspace: string, eventKey: string, payload: Record<string, unknown> = {}, client: Api = admin) => {
  const result = await client.post(`/api/workspaces/${workspace}/events/publish`, { eventKey, payload });
  assert.is(result.status, 200, result.text);
  return result.body.meta.eventId as string;
};

const deliveryOf = (workspace: string, eventId: string, status: string) =>
  waitFor(`a ${status} delivery of ${eventId}`, async () => {
    const shown = (await admin.get(`/api/workspaces/${workspace}/events/${eventId}`)).body.data;
    return shown?.deliveries?.[0]?.status === status && shown;
  });

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

test('a subscriber answering 500 then 200 shows a RETRY then a SUCCESS attempt, with both statuses and the answer', async () => {
  const receiver = await subscriber((_, index) => ({ status: index === 0 ? 500 : 200 }));
  await workspaceWith(admin, 'shown', 'crm');
  const { id: subscriptionId } = await subscribeExternal(admin, 'shown', 'crm.deal.closed', 'crm', receiver.url);
  const eventId = await publish('shown', 'crm.deal.closed', { n: 1 });
  const shown = await deliveryOf('shown', eventId, 'SUCCEEDED');
  assert.is(shown.id, eventId);
  assert.equal(shown.payload, { n: 1 });
  const [delivery] = shown.deliveries;
  assert.equal(Object.keys(delivery).sort(), [
    'attempts', 'completedAt', 'createdAt', 'eventId', 'extensionKey', 'id', 'kind', 'status', 'subscriptionId', 'workspaceId',
  ]);
  assert.is(delivery.id, receiver.received[0]!.headers['webhook-id']);
  assert.is(delivery.subscriptionId, subscriptionId);
  assert.is(delivery.kind, 'EXTERNAL_SERVICE');
  assert.equal(
    delivery.attempts.map((a: any) => [a.number, a.outcome, a.httpStatus, a.responseExcerpt]),
    [
      [1, 'RETRY', 500, '{}'],
      [2, 'SUCCESS', 200, '{}'],
    ],
  );
  assert.is(delivery.attempts[0].error, 'subscriber answered HTTP 500');
  assert.type(delivery.attempts[0].durationMs, 'number');
  assert.ok(Date.parse(delivery.completedAt) >= Date.parse(delivery.createdAt));
});

test('the answer excerpt holds the first 2 KiB of the answer, never more', async () => {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end('x'.repeat(10_000)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await workspaceWith(admin, 'excerpt', 'crm');
    const port = (server.address() as { port: number }).port;
    await subscribeExternal(admin, 'excerpt', 'crm.deal.closed', 'crm', `http://127.0.0.1:${port}`);
    const eventId = await publish('excerpt', 'crm.deal.closed');
    const shown = await deliveryOf('excerpt', eventId, 'SUCCEEDED');
    assert.is(shown.deliveries[0].attempts[0].responseExcerpt, 'x'.repeat(2048));
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a delivery that fails for good is DEAD; replay makes it PENDING and then SUCCEEDED; discard makes it DISCARDED', async () => {
  const receiver = await subscriber(() => ({ status: 503 }));
  await workspaceWith(admin, 'moves', 'crm');
  await subscribeExternal(admin, 'moves', 'crm.deal.closed', 'crm', receiver.url);
  const replayed = await publish('moves', 'crm.deal.closed', { n: 1 });
  const discarded = await publish('moves', 'crm.deal.closed', { n: 2 });
  const dead = await deliveryOf('moves', replayed, 'DEAD');
  assert.equal(
    dead.deliveries[0].attempts.map((a: any) => a.outcome),
    ['RETRY', 'RETRY', 'RETRY', 'FAILED'],
  );
  await deliveryOf('moves', discarded, 'DEAD');
  const letters = (await admin.get('/api/admin/dead-letters?workspaceId=moves')).body.data as any[];
  const letterOf = (eventId: string) => letters.find((letter) => letter.event.id === eventId).id;

  receiver.answer(() => ({ status: 200 }));
  assert.is((await admin.post(`/api/admin/dead-letters/${letterOf(replayed)}/replay`)).status, 202);
  const succeeded = await deliveryOf('moves', replayed, 'SUCCEEDED');
  assert.equal(succeeded.deliveries[0].attempts.map((a: any) => a.number), [1, 2, 3, 4, 5], 'attempts go on numbering after a replay');

  assert.is((await admin.delete(`/api/admin/dead-letters/${letterOf(discarded)}`)).status, 204);
  const shown = (await admin.get(`/api/workspaces/moves/events/${discarded}`)).body.data;
  assert.is(shown.deliveries[0].status, 'DISCARDED');
  const listed = (await admin.get('/api/workspaces/moves/deliveries?status=DISCARDED')).body.data as any[];
  assert.equal(listed.map((d) => d.eventId), [discarded]);
});

test('deliveries list newest first, filtered, and page on with meta.nextCursor (absent on the last page)', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'listed', 'crm');
  const { id: first } = await subscribeExternal(admin, 'listed', 'crm.deal.closed', 'crm', receiver.url);
  const { id: second } = await subscribeExternal(admin, 'listed', 'crm.deal.lost', 'crm', receiver.url);
  const closed: string[] = [];
  for (let n = 0; n < 5; n += 1) closed.push(await publish('listed', 'crm.deal.closed', { n }));
  const lost = await publish('listed', 'crm.deal.lost');
  await receiver.waitForCount(6);

  const all = await admin.get('/api/workspaces/listed/deliveries');
  assert.equal((all.body.data as any[]).map((d) => d.eventId), [lost, ...[...closed].reverse()]);
  assert.is(all.body.meta.nextCursor, undefined);

  const bySubscription = (await admin.get(`/api/workspaces/listed/deliveries?subscriptionId=${second}`)).body.data as any[];
  assert.equal(bySubscription.map((d) => d.eventId), [lost]);
  const byKey = (await admin.get('/api/workspaces/listed/deliveries?eventKey=crm.deal.closed&limit=2')).body;
  assert.equal(byKey.data.map((d: any) => d.subscriptionId), [first, first]);
  const seen = [...byKey.data];
  let cursor = byKey.meta.nextCursor;
  while (cursor) {
    const page = (await admin.get(`/api/workspaces/listed/deliveries?eventKey=crm.deal.closed&limit=2&cursor=${cursor}`)).body;
    seen.push(...page.data);
    cursor = page.meta.nextCursor;
  }
  assert.equal(seen.map((d) => d.eventId), [...closed].reverse());

  const future = (await admin.get('/api/workspaces/listed/deliveries?since=2999-01-01T00:00:00Z')).body.data;
  assert.equal(future, []);
  const past = (await admin.get('/api/workspaces/listed/deliveries?until=2000-01-01T00:00:00Z')).body.data;
  assert.equal(past, []);
});

test('paging while 20 clients publish misses and repeats nothing that existed at the first page', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'busy', 'crm');
  await subscribeExternal(admin, 'busy', 'crm.deal.closed', 'crm', receiver.url);
  for (let n = 0; n < 60; n += 1) await publish('busy', 'crm.deal.closed', { n });
  let publishing = true;
  const publishers = Array.from({ length: 20 }, async (_, client) => {
    for (let n = 0; publishing; n += 1) await publish('busy', 'crm.deal.closed', { client, n });
  });
  try {
    const first = (await admin.get('/api/workspaces/busy/deliveries?limit=7')).body;
    const seen: string[] = first.data.map((d: any) => d.id);
    const existing = new Set(seen);
    let cursor = first.meta.nextCursor;
    while (cursor) {
      const page = (await admin.get(`/api/workspaces/busy/deliveries?limit=7&cursor=${cursor}`)).body;
      seen.push(...page.data.map((d: any) => d.id));
      cursor = page.meta.nextCursor;
    }
    assert.is(new Set(seen).size, seen.length, 'no delivery repeats');
    assert.ok(seen.length >= 60 + existing.size - 7, 'every delivery older than the first page was listed');
    // Everything that existed when the first page was read: the 60 and whatever arrived before it.
    const before = (await admin.get(`/api/workspaces/busy/deliveries?limit=500`)).body.data.map((d: any) => d.id);
    const oldest60 = before.slice(-60);
    for (const id of oldest60) assert.ok(seen.includes(id), `${id} was listed`);
  } finally {
    publishing = false;
    await Promise.all(publishers);
  }
});

test('bad input: 404 for unknown workspace or event, 400 for cursor, status, range, limit, 403 for non-members', async () => {
  await workspaceWith(admin, 'guarded', 'crm');
  await workspaceWith(admin, 'other', 'crm');
  const eventId = await publish('guarded', 'crm.deal.closed');
  const missing = '00000000-0000-4000-8000-000000000000';
  assert.is((await admin.get(`/api/workspaces/nowhere/events/${missing}`)).status, 404);
  assert.is((await admin.get('/api/workspaces/nowhere/deliveries')).status, 404);
  assert.is((await admin.get(`/api/workspaces/guarded/events/${missing}`)).status, 404);
  assert.is((await admin.get(`/api/workspaces/other/events/${eventId}`)).status, 404, 'an event of another workspace');

  for (const query of [
    'cursor=not-a-cursor',
    `cursor=${Buffer.from(JSON.stringify({ k: 'deliveries', w: 'other', p: 5 })).toString('base64url')}`,
    'status=LOST',
    'since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z',
    'since=yesterday',
    'limit=0',
    'limit=501',
  ]) {
    const result = await admin.get(`/api/workspaces/guarded/deliveries?${query}`);
    assert.is(result.status, 400, `${query}: ${result.text}`);
    assert.is(result.body.code, 'VALIDATION_ERROR');
    assert.ok(Array.isArray(result.body.meta.issues) && result.body.meta.issues.length > 0, query);
  }

  const outsider = await createUser(t, 'outsider@example.test');
  assert.is((await outsider.get(`/api/workspaces/guarded/events/${eventId}`)).status, 403);
  assert.is((await outsider.get('/api/workspaces/guarded/deliveries')).status, 403);
});

test('events page through every retained event with cursors while others publish, and filter by key and time', async () => {
  await workspaceWith(admin, 'paged', 'crm');
  const published: string[] = [];
  for (let n = 0; n < 1_100; n += 1) published.push(await publish('paged', n % 2 ? 'crm.deal.closed' : 'crm.deal.lost', { n }));
  let publishing = true;
  const publishers = Array.from({ length: 20 }, async (_, client) => {
    for (let n = 0; publishing; n += 1) await publish('paged', 'crm.deal.closed', { client, n });
  });
  try {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await admin.get(`/api/workspaces/paged/events?limit=250${cursor ? `&cursor=${cursor}` : ''}`);
      assert.is(page.status, 200, page.text);
      seen.push(...page.body.data.map((e: any) => e.id));
      cursor = page.body.meta.nextCursor;
    } while (cursor);
    assert.is(new Set(seen).size, seen.length, 'no event repeats');
    const listed = new Set(seen);
    for (const id of published) assert.ok(listed.has(id), `${id} was listed`);
  } finally {
    publishing = false;
    await Promise.all(publishers);
  }
  const lost = (await admin.get('/api/workspaces/paged/events?eventKey=crm.deal.lost&limit=1000')).body;
  assert.is(lost.data.length, 550);
  assert.is(lost.meta.nextCursor, undefined);
  const none = (await admin.get('/api/workspaces/paged/events?until=2000-01-01T00:00:00Z')).body;
  assert.equal(none.data, []);
  const deliveriesCursor = Buffer.from(JSON.stringify({ k: 'deliveries', w: 'paged', p: 1 })).toString('base64url');
  const foreign = await admin.get(`/api/workspaces/paged/events?cursor=${deliveriesCursor}`);
  assert.is(foreign.status, 400);
  assert.is(foreign.body.meta.issues[0].path, 'cursor');
  // The event store reads the position inside a cursor: one it cannot read (forged, or the other
  // backend's) is the same 400 as a cursor that does not decode at all.
  const envelope = ({ code, message, meta }: { code: unknown; message: unknown; meta: { issues: unknown } }) => ({ code, message, issues: meta.issues });
  const undecodable = await admin.get('/api/workspaces/paged/events?cursor=not-a-cursor');
  assert.is(undecodable.status, 400);
  for (const position of ['nonsense', '1:1700000000000:not-an-id', '99999999999999999999', '12:', -1]) {
    const forged = Buffer.from(JSON.stringify({ k: 'events', w: 'paged', p: position })).toString('base64url');
    const refused = await admin.get(`/api/workspaces/paged/events?cursor=${forged}`);
    assert.is(refused.status, 400, `${position}: ${refused.text}`);
    assert.equal(envelope(refused.body), envelope(undecodable.body), `${position}: the same error as a cursor that does not decode`);
  }
});

test('records survive a restart', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'kept', 'crm');
  await subscribeExternal(admin, 'kept', 'crm.deal.closed', 'crm', receiver.url);
  const eventId = await publish('kept', 'crm.deal.closed');
  await deliveryOf('kept', eventId, 'SUCCEEDED');
  t = await t.restart();
  admin = await t.admin();
  const shown = await deliveryOf('kept', eventId, 'SUCCEEDED');
  assert.is(shown.deliveries[0].attempts.length, 1);
});

test.run();
