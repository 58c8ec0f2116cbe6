import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveConfig, type DaemonConfig } from '../src/daemon/config.js';
import { SHORT_DELIVERY_LEASE, spawnDaemon } from './helpers/cli.js';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace, FAST_DISPATCH, pluginsDirWith, workspaceWith } from './helpers/fixtures.js';
import { api, call, tokenOf, type Api, type HttpResult } from './helpers/http.js';
import { filesOnly } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';

/**
 * Publishing with `Idempotency-Key`, over HTTP, on either backend: the same
 * key and body answer the first answer again and publish nothing; another
 * body is 409; a failed request keeps nothing; concurrent requests publish
 * once; a key outlives a restart and a crash, and expires.
 */

const IDEMPOTENCY = resolveConfig({}, {}).idempotency;

let t: TestDaemon;
let admin: Api & { token: string };
const daemons: TestDaemon[] = [];

async function start(overrides: Partial<DaemonConfig> = {}): Promise<TestDaemon> {
  const started = await startTestDaemon({ dispatch: FAST_DISPATCH, ...overrides });
  daemons.push(started);
  return started;
}

test.before(async () => {
  t = await start();
  admin = await t.admin();
});
test.after(async () => {
  for (const daemon of daemons) await daemon.destroy();
});

const publishWith = (client: Api, workspace: string, key: string, body: unknown) =>
  client.post(`/api/workspaces/${workspace}/events/publish`, body, { headers: { 'idempotency-key': key } });

/** The body as these exact bytes. */
const publishBytes = (client: Api, workspace: string, key: string, bytes: string) =>
  client.send('POST', `/api/workspaces/${workspace}/events/publish`, { raw: bytes, headers: { 'content-type': 'application/json', 'idempotency-key': key } });

const eventIdsOf = async (client: Api, workspace: string): Promise<string[]> => {
  const listed = await client.get(`/api/workspaces/${workspace}/events?limit=1000`);
  assert.is(listed.status, 200, listed.text);
  return listed.body.data.map((event: { id: string }) => event.id);
};

function assertPublished(result: HttpResult): string {
  assert.is(result.status, 200, result.text);
  assert.is(result.body.data, null);
  assert.equal(Object.keys(result.body.meta), ['eventId'], 'a first answer is no replay');
  return result.body.meta.eventId;
}

function assertReplayed(result: HttpResult, eventId: string): void {
  assert.is(result.status, 200, result.text);
  assert.is(result.body.data, null);
  assert.equal(result.body.meta, { eventId, idempotentReplay: true });
}

function assertRefused(result: HttpResult, status: number, code: string): void {
  assert.is(result.status, status, result.text);
  assert.is(result.body.code, code);
}

test('the same key and body again answer the first answer, with idempotentReplay, and publish nothing', async () => {
  await createWorkspace(admin, 'replays');
  const body = { eventKey: 'crm.deal.closed', payload: { dealId: 'D-1' } };
  const eventId = assertPublished(await publishWith(admin, 'replays', 'deal-D-1', body));
  assertReplayed(await publishWith(admin, 'replays', 'deal-D-1', body), eventId);
  assertReplayed(await publishWith(admin, 'replays', 'deal-D-1', body), eventId);
  assert.equal(await eventIdsOf(admin, 'replays'), [eventId]);
  assert.is((await admin.get(`/api/workspaces/replays/events/${eventId}`)).body.data.payload.dealId, 'D-1');
});

test('the same key with another body is 409 IDEMPOTENCY_KEY_REUSED and publishes nothing; the same body means the same bytes', async () => {
  await createWorkspace(admin, 'reused');
  const eventId = assertPublished(await publishBytes(admin, 'reused', 'k-1', '{"eventKey":"crm.deal.closed","payload":{"n":1}}'));
  const other = await publishBytes(admin, 'reused', 'k-1', '{"eventKey":"crm.deal.closed","payload":{"n":2}}');
  assertRefused(other, 409, 'IDEMPOTENCY_KEY_REUSED');
  assert.is(other.body.data, null);
  // The same JSON value in other bytes is another body.
  assertRefused(await publishBytes(admin, 'reused', 'k-1', '{"eventKey": "crm.deal.closed", "payload": {"n": 1}}'), 409, 'IDEMPOTENCY_KEY_REUSED');
  assertReplayed(await publishBytes(admin, 'reused', 'k-1', '{"eventKey":"crm.deal.closed","payload":{"n":1}}'), eventId);
  assert.equal(await eventIdsOf(admin, 'reused'), [eventId]);
});

test("a key is its workspace's: the same key and body in another workspace publish there; another member of the workspace gets the replay", async () => {
  await createWorkspace(admin, 'north');
  await createWorkspace(admin, 'south');
  const body = { eventKey: 'crm.deal.closed', payload: { n: 1 } };
  const north = assertPublished(await publishWith(admin, 'north', 'shared-key', body));
  const south = assertPublished(await publishWith(admin, 'south', 'shared-key', body));
  assert.is.not(north, south);
  assert.equal(await eventIdsOf(admin, 'north'), [north]);
  assert.equal(await eventIdsOf(admin, 'south'), [south]);

  const member = await createUser(t, 'north-member@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/north/members/${member.id}`)).status, 200);
  assertReplayed(await publishWith(member, 'north', 'shared-key', body), north);
  assert.equal(await eventIdsOf(admin, 'north'), [north]);
});

test('a request answered with an error keeps nothing: a retry with its key publishes', async () => {
  const body = { eventKey: 'crm.deal.closed', payload: { n: 1 } };
  assertRefused(await publishWith(admin, 'later', 'early-bird', body), 404, 'NOT_FOUND');
  await createWorkspace(admin, 'later');
  const early = assertPublished(await publishWith(admin, 'later', 'early-bird', body));
  assert.equal(await eventIdsOf(admin, 'later'), [early]);

  // Refused for its payload (400), then sent again fixed: another body, yet no 409.
  const invalid = { eventKey: 'platform.notification', payload: { message: 'no channel' } };
  assertRefused(await publishWith(admin, 'later', 'fix-and-retry', invalid), 400, 'VALIDATION_ERROR');
  const fixed = { eventKey: 'platform.notification', payload: { channel: 'general', message: 'hello' } };
  const eventId = assertPublished(await publishWith(admin, 'later', 'fix-and-retry', fixed));
  assertReplayed(await publishWith(admin, 'later', 'fix-and-retry', fixed), eventId);
  const notifications = await admin.get('/api/workspaces/later/events?eventKey=platform.notification');
  assert.equal(notifications.body.data.map((event: { id: string }) => event.id), [eventId]);
});

test('a malformed Idempotency-Key is 400 VALIDATION_ERROR naming the header, and publishes nothing', async () => {
  await createWorkspace(admin, 'malformed');
  for (const key of ['', 'has space', 'x'.repeat(256), 'caf\u00e9', 'one, two']) {
    const result = await publishWith(admin, 'malformed', key, { eventKey: 'crm.deal.closed' });
    assertRefused(result, 400, 'VALIDATION_ERROR');
    assert.is(result.body.meta.issues[0].path, 'Idempotency-Key', JSON.stringify(key));
  }
  assertPublished(await publishWith(admin, 'malformed', 'x'.repeat(255), { eventKey: 'crm.deal.closed' }));
  assertPublished(await publishWith(admin, 'malformed', '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', { eventKey: 'crm.deal.closed' }));
  assert.is((await eventIdsOf(admin, 'malformed')).length, 2);
});

test('50 concurrent requests with one key publish once, and all 50 answer its eventId', async () => {
  await createWorkspace(admin, 'crowd');
  const body = { eventKey: 'crm.deal.closed', payload: { n: 50 } };
  const answers = await Promise.all(Array.from({ length: 50 }, () => publishWith(admin, 'crowd', 'one-key', body)));
  for (const answer of answers) assert.is(answer.status, 200, answer.text);
  const published = await eventIdsOf(admin, 'crowd');
  assert.is(published.length, 1);
  assert.equal(new Set(answers.map((answer) => answer.body.meta.eventId)), new Set(published));
  assert.is(answers.filter((answer) => answer.body.meta.idempotentReplay === undefined).length, 1, 'one answer is the publish, the others replays');
});

test('concurrent requests with one key and two bodies: the first body publishes once, the same body replays, the other is 409', async () => {
  await createWorkspace(admin, 'rivals');
  const bodies = [{ eventKey: 'crm.deal.closed', payload: { side: 'a' } }, { eventKey: 'crm.deal.closed', payload: { side: 'b' } }];
  const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => publishWith(admin, 'rivals', 'contested', bodies[n % 2])));
  const [eventId] = await eventIdsOf(admin, 'rivals');
  assert.equal(await eventIdsOf(admin, 'rivals'), [eventId]);
  const winner = (await admin.get(`/api/workspaces/rivals/events/${eventId}`)).body.data.payload.side;
  answers.forEach((answer, n) => {
    if (bodies[n % 2]!.payload.side === winner) assert.is(answer.body.meta?.eventId, eventId, answer.text);
    else assertRefused(answer, 409, 'IDEMPOTENCY_KEY_REUSED');
  });
});

test('a key outlives a restart: the retry replays', async () => {
  const own = await start();
  const client = await own.admin();
  await createWorkspace(client, 'durable');
  const body = { eventKey: 'crm.deal.closed', payload: { n: 1 } };
  const eventId = assertPublished(await publishWith(client, 'durable', 'before-restart', body));
  const restarted = await own.restart();
  daemons.push(restarted);
  const again = await restarted.admin();
  assertReplayed(await publishWith(again, 'durable', 'before-restart', body), eventId);
  assertRefused(await publishWith(again, 'durable', 'before-restart', { ...body, payload: { n: 2 } }), 409, 'IDEMPOTENCY_KEY_REUSED');
  assert.equal(await eventIdsOf(again, 'durable'), [eventId]);
});

test('a key lives PLATFORM_IDEMPOTENCY_TTL_SECONDS: then the same key publishes anew', async () => {
  const { idempotency } = resolveConfig({}, { PLATFORM_IDEMPOTENCY_TTL_SECONDS: '1' });
  assert.is(idempotency.ttlMs, 1000);
  const own = await start({ idempotency, jobs: { ...resolveConfig({}, {}).jobs, idempotencyPruneMs: 1000 } });
  const client = await own.admin();
  await createWorkspace(client, 'fleeting');
  const body = { eventKey: 'crm.deal.closed', payload: { n: 1 } };
  const first = assertPublished(await publishWith(client, 'fleeting', 'short-lived', body));
  await sleep(1_100);
  const second = assertPublished(await publishWith(client, 'fleeting', 'short-lived', body));
  assert.is.not(second, first);
  assertReplayed(await publishWith(client, 'fleeting', 'short-lived', body), second);
  // After its lifetime the key is free for any body.
  await sleep(1_100);
  assertPublished(await publishWith(client, 'fleeting', 'short-lived', { ...body, payload: { n: 2 } }));
  assert.is((await eventIdsOf(client, 'fleeting')).length, 3);
});

filesOnly(test)('past PLATFORM_IDEMPOTENCY_MAX_KEYS the oldest keys are forgotten first, also across a restart (files only: PostgreSQL keeps every key in the database)', async () => {
  const own = await start({ idempotency: { ...IDEMPOTENCY, maxKeys: 3 } });
  const client = await own.admin();
  await createWorkspace(client, 'capped');
  const body = (n: number) => ({ eventKey: 'crm.deal.closed', payload: { n } });
  const ids = [];
  for (let n = 1; n <= 4; n += 1) ids.push(assertPublished(await publishWith(client, 'capped', `key-${n}`, body(n))));
  assertReplayed(await publishWith(client, 'capped', 'key-4', body(4)), ids[3]!);
  assertReplayed(await publishWith(client, 'capped', 'key-2', body(2)), ids[1]!);
  const restarted = await own.restart();
  daemons.push(restarted);
  const again = await restarted.admin();
  assertReplayed(await publishWith(again, 'capped', 'key-3', body(3)), ids[2]!);
  // key-1 was the oldest of four: forgotten, so it publishes again.
  assert.is.not(assertPublished(await publishWith(again, 'capped', 'key-1', body(1))), ids[0]);
});

test('a request waits for the unfinished first one with its key, at most its wait: then 409 CONFLICT, and a later retry replays', async () => {
  const own = await start({ idempotency: { ...IDEMPOTENCY, waitMs: 50 }, pluginsDir: await pluginsDirWith('recorder.mjs') });
  const client = await own.admin();
  await workspaceWith(client, 'patient', 'recorder');
  const subscribed = await client.post('/api/workspaces/patient/subscriptions', { eventKey: 'slow.sync', extensionKey: 'recorder', kind: 'IN_PROCESS' });
  assert.is(subscribed.status, 201, subscribed.text);
  // A synchronous handler holds each publish of slow.sync for half a second, ten times the wait.
  const body = { eventKey: 'slow.sync', payload: {} };
  const answers = await Promise.all([publishWith(client, 'patient', 'slow-one', body), publishWith(client, 'patient', 'slow-one', body)]);
  const [published, waited] = answers[0].status === 200 ? answers : [answers[1], answers[0]];
  const eventId = assertPublished(published!);
  assertRefused(waited!, 409, 'CONFLICT');
  assert.match(waited!.body.message ?? '', 'still being processed');
  assertReplayed(await publishWith(client, 'patient', 'slow-one', body), eventId);
  assert.equal(await eventIdsOf(client, 'patient'), [eventId]);
});

test('SIGKILL during keyed publishes: after the restart, the retry of every key sent publishes it at most once, and acknowledged keys replay', async () => {
  const dir = await tempDir();
  const env = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, ...SHORT_DELIVERY_LEASE };
  const daemon = await spawnDaemon(dir, env);
  const client = api(daemon.url, tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
  await createWorkspace(client, 'crashing');
  const bodyOf = (key: string) => ({ eventKey: 'crm.deal.closed', payload: { key } });

  /** Every key sent, with the event id its answer gave (null: no answer, the daemon died first). */
  const sent = new Map<string, string | null>();
  let killed = false;
  const publisher = async (worker: number) => {
    for (let n = 0; !killed; n += 1) {
      const key = `w${worker}-${n}`;
      sent.set(key, null);
      try {
        const answer = await publishWith(client, 'crashing', key, bodyOf(key));
        if (answer.status === 200) sent.set(key, answer.body.meta.eventId);
      } catch {
        return; // the connection died with the daemon
      }
    }
  };
  const publishers = Array.from({ length: 8 }, (_, worker) => publisher(worker));
  while ([...sent.values()].filter(Boolean).length < 100) await sleep(5);
  daemon.child.kill('SIGKILL');
  killed = true;
  assert.is(await daemon.exited, 'SIGKILL');
  await Promise.all(publishers);

  const restarted = await spawnDaemon(dir, env);
  try {
    const again = api(restarted.url, tokenOf(await call(restarted.url, 'POST', '/api/auth/login', { json: ADMIN })));
    // On PostgreSQL the keys the killed daemon held in flight wait for its lease to lapse (2 s here), then are settled.
    const retried = await Promise.all(
      [...sent].map(async ([key, acknowledged]) => {
        const answer = await publishWith(again, 'crashing', key, bodyOf(key));
        assert.is(answer.status, 200, `${key}: ${answer.text}`);
        if (acknowledged !== null) assertReplayed(answer, acknowledged);
        return answer.body.meta.eventId as string;
      }),
    );
    const published = await eventIdsOf(again, 'crashing');
    assert.is(published.length, sent.size, 'one event per key sent: none twice, none lost on its retry');
    assert.equal(new Set(published), new Set(retried));
  } finally {
    restarted.child.kill('SIGTERM');
    await restarted.exited;
  }
});

test.run();
