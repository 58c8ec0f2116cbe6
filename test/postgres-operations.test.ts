import { createHook } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { cpSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CarriedEvent, type Delivery } from '../src/daemon/dispatch/types.js';
import { SecretBox } from '../src/daemon/secrets/box.js';
import { ChangeFeed } from '../src/daemon/store/postgres/change-feed.js';
import { openMigratedDatabase } from '../src/daemon/store/postgres/connect.js';
import { Database } from '../src/daemon/store/postgres/database.js';
import { inOneTransaction } from '../src/daemon/store/postgres/in-transaction.js';
import { openFileStores, type Stores } from '../src/daemon/store/stores.js';
import { postgresStores } from '../src/daemon/store/postgres/stores.js';
import { signGithub } from '../src/handlers/webhooks/sign.js';
import { runCli, spawnDaemon } from './helpers/cli.js';
import { ADMIN } from './helpers/daemon.js';
import { createWorkspace, install, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import { api, call, tokenOf, type Api } from './helpers/http.js';
import { freshDatabase } from './helpers/postgres.js';
import { startSubscriber, type ReceivedDelivery } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';
import { listed } from './helpers/pages.js';

// `platform db import`, `platform keys rotate` and `platform backup` on PostgreSQL, run as
// processes on a data directory made by a real file-backed daemon.

const GITHUB_SECRET = 'gh-secret-never-shown-4Tw';
const URL_PASSWORD = 'url-pa55-never-shown-8Jq';
const SERVICE_URL = `http://hookuser:${URL_PASSWORD}@127.0.0.1:9/hooks`;
const SCHEMA = 'platform';
/** Refused webhook calls made after the accepted one. */
const CALLS = 1_025;
const ignore = () => undefined;

/** A data directory of a stopped file daemon holding some of everything, and a session logged out there. */
let dataDir: string;
let revokedJti: string;

const jtiOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string }).jti;

test.before(async () => {
  dataDir = await tempDir();
  const daemon = await spawnDaemon(dataDir, { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password });
  try {
    const login = async (email: string, password: string) => tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: { email, password } }));
    const admin: Api = api(daemon.url, await login(ADMIN.email, ADMIN.password));
    const member = await admin.post('/api/admin/users', { email: 'Member@Example.test', fullName: 'Mia Member', password: 'member-password-1' });
    assert.is(member.status, 201, member.text);
    const memberSession = await login('member@example.test', 'member-password-1');
    assert.is((await api(daemon.url, memberSession).post('/api/auth/logout')).status, 200);
    revokedJti = jtiOf(memberSession);

    await publishExtension(admin, 'crm', '1.0.0');
    await publishExtension(admin, 'crm', '1.1.0+build.7', { changelog: 'faster' });
    await createWorkspace(admin, 'acme');
    await createWorkspace(admin, 'beta');
    assert.is((await admin.put(`/api/admin/workspaces/acme/members/${member.body.data.id}`)).status, 200);
    await install(admin, 'acme', 'crm', '1.0.0');
    assert.is((await admin.delete('/api/admin/marketplace/extensions/crm/versions/1.0.0?reason=broken')).status, 204);
    await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', SERVICE_URL);
    await subscribeExternal(admin, 'acme', 'crm.deal.lost', 'crm', 'http://127.0.0.1:9/lost');

    await publishExtension(admin, 'gh');
    const configured = await admin.put('/api/admin/marketplace/extensions/gh/config', {
      fields: [
        { name: 'webhook.scheme', type: 'STRING', value: 'github' },
        { name: 'webhook.secret', type: 'SECRET', value: GITHUB_SECRET },
        { name: 'webhook.workspaceId', type: 'STRING', value: 'acme' },
      ],
    });
    assert.is(configured.status, 200, configured.text);
    const body = '{"action":"opened","number":7}';
    const hook = (signature: string, delivery: string) =>
      call(daemon.url, 'POST', '/api/webhooks/gh', {
        raw: body,
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': delivery, 'x-hub-signature-256': signature },
      });
    assert.is((await hook(signGithub(GITHUB_SECRET, body), 'd-1')).status, 200);
    // Past the 1,000 calls an extension keeps, so that the kept ones are numbered from above 1.
    for (let batch = 0; batch < CALLS / 25; batch += 1) {
      const answers = await Promise.all(Array.from({ length: 25 }, (_, index) => hook(signGithub('a wrong secret', body), `d-${batch}-${index}`)));
      assert.equal(answers.map((answer) => answer.status), answers.map(() => 401));
    }

    for (const [channel, message] of [
      ['deals', 'Deal D-1 closed'],
      ['general', 'hello'],
      ['deals', 'Deal D-2 closed \u0000 with a NUL'],
    ]) {
      const published = await admin.post('/api/workspaces/beta/events/publish', { eventKey: 'platform.notification', payload: { channel, message } });
      assert.is(published.status, 200, published.text);
    }
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

interface Opened {
  stores: Stores;
  database?: Database;
  close(): Promise<void>;
}

async function openPostgres(url: string): Promise<Opened> {
  const database = new Database({ url, schema: SCHEMA }, ignore);
  const stores = postgresStores(database, new ChangeFeed(database, ignore));
  // The stores first: their timers (lease renewal) would otherwise go on against the ended pool.
  return {
    stores,
    database,
    close: async () => {
      await stores.close();
      await database.close();
    },
  };
}

async function openFiles(dir: string): Promise<Opened> {
  const stores = await openFileStores(dir);
  return { stores, close: () => stores.close() };
}

/** Rows in every table of the schema, by table. */
async function rowCounts(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [SCHEMA]);
    const counts: Record<string, number> = {};
    for (const { name } of tables) {
      counts[name] = (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}.${name}`)).rows[0]!.n;
    }
    return counts;
  } finally {
    await client.end();
  }
}

const importInto = (url: string, dir = dataDir, env: Record<string, string> = {}) =>
  runCli(['db', 'import', '--data-dir', dir, '--database-url', url], { env });

/** Every sealed value the database holds. */
async function sealedValues(url: string): Promise<string[]> {
  const opened = await openPostgres(url);
  try {
    const { subscriptions } = await opened.stores.workspaces.contents(null);
    const fields = [...(await opened.stores.extensionConfig.loadAll()).values()].flat();
    return [
      ...subscriptions.flatMap((subscription) => [subscription.sealedSigningSecret, subscription.sealedServiceBaseUrl ?? []].flat()),
      ...fields.filter((field) => field.type === 'SECRET').map((field) => field.value as string),
    ];
  } finally {
    await opened.close();
  }
}

const opensWith = (box: SecretBox, sealed: string) => {
  try {
    return box.open(sealed);
  } catch {
    return null;
  }
};

test('db import copies every converted domain, and the PostgreSQL stores read back what the file stores hold', async () => {
  const url = await freshDatabase();
  const imported = await importInto(url);
  assert.is(imported.code, 0, imported.stderr);
  const report = imported.stdout;
  for (const [kind, count] of [
    ['users', 2],
    ['revoked sessions', 1],
    ['extensions', 2],
    ['versions', 3],
    ['workspaces', 2],
    ['members', 1],
    ['installations', 1],
    ['subscriptions', 2],
    ['configured extensions', 1],
    ['configuration fields', 3],
    ['chat channels', 2],
    ['chat messages', 3],
    ['webhook requests', 1000],
  ] as const) {
    assert.match(report, new RegExp(`^${kind} +${count}$`, 'm'), `${kind} in\n${report}`);
  }
  assert.match(report, /^audit records +\d+$/m);
  assert.match(report, `${join(dataDir, 'master.key')} in its data directory`);
  assert.match(report, 'jwt-secret');
  assert.not.match(report, /postgres:\/\/postgres:[^*]/, 'the password is not shown');

  const files = await openFiles(dataDir);
  const postgres = await openPostgres(url);
  try {
    const [f, p] = [files.stores, postgres.stores];
    assert.equal(await p.users.list(), await f.users.list());
    assert.is((await p.users.findByEmail('MEMBER@example.test'))?.fullName, 'Mia Member');
    assert.ok(await p.revocations.isRevoked(revokedJti), 'a logged-out session stays logged out');
    assert.not.ok(await p.revocations.isRevoked('another-jti'));

    assert.equal(await p.catalog.loadAll(), await f.catalog.loadAll());
    const trail = await f.catalog.auditTrail({ limit: 100 });
    assert.ok(trail.length >= 5, `${trail.length} audit records`);
    assert.equal(await p.catalog.auditTrail({ limit: 100 }), trail);
    assert.equal(await p.catalog.auditTrail({ extensionKey: 'crm', limit: 2, offset: 1 }), await f.catalog.auditTrail({ extensionKey: 'crm', limit: 2, offset: 1 }));

    assert.equal(await p.workspaces.listWorkspaces(), await f.workspaces.listWorkspaces());
    const contents = await f.workspaces.contents(null);
    assert.equal(await p.workspaces.contents(null), contents);
    assert.equal(await p.workspaces.activeSubscriptions('acme', 'crm.deal.closed'), await f.workspaces.activeSubscriptions('acme', 'crm.deal.closed'));
    const box = await SecretBox.open(dataDir, null);
    const withCredentials = contents.subscriptions.find((subscription) => subscription.eventKey === 'crm.deal.closed')!;
    assert.is(box.open(withCredentials.sealedServiceBaseUrl!), SERVICE_URL, 'the URL is sealed as it was, under the same key');

    assert.equal(await p.extensionConfig.loadAll(), await f.extensionConfig.loadAll());
    const secret = (await p.extensionConfig.fields('gh')).find((field) => field.name === 'webhook.secret')!;
    assert.is(box.open(secret.value as string), GITHUB_SECRET);

    assert.equal(await p.chat.channelsOf('beta'), await f.chat.channelsOf('beta'));
    for (const channel of ['deals', 'general']) {
      assert.equal(await p.chat.messages('beta', channel, 1000), await f.chat.messages('beta', channel, 1000));
    }
    assert.is((await p.chat.messages('beta', 'deals', 1))[0]!.message, 'Deal D-2 closed \u0000 with a NUL');

    const range = await f.webhookRequests.keptRange('gh');
    assert.equal(range, { oldest: CALLS + 1 - 999, newest: CALLS + 1 });
    assert.equal(await p.webhookRequests.keptRange('gh'), range);
    const window = { before: range!.newest + 1, floor: range!.oldest };
    assert.equal(await p.webhookRequests.newestFirst('gh', window, 1000), await f.webhookRequests.newestFirst('gh', window, 1000));
    await p.webhookRequests.record('gh', (await f.webhookRequests.newestFirst('gh', window, 1))[0]!.entry);
    assert.equal(
      await p.webhookRequests.keptRange('gh'),
      { oldest: range!.oldest + 1, newest: range!.newest + 1 },
      'the next call is numbered after the imported ones',
    );
  } finally {
    await files.close();
    await postgres.close();
  }
});

test('db import copies the events, every delivery record with its attempts, pending deliveries and dead letters: a PostgreSQL daemon lists them alike, delivers what was pending and replays a dead letter', async () => {
  const dir = await tempDir();
  // Answers by the event's payload: `fail` for good (dead letters), `later` once with a pause and then no answer, `hang` never; the rest 200.
  let running = true;
  const subscriber = await startSubscriber((request) => {
    if (!running) return {};
    const answer = request.json?.payload?.answer;
    if (answer === 'fail') return { status: 500 };
    if (answer === 'later' && triesOf(subscriber.received, request.json.id) === 1) return { status: 503, headers: { 'retry-after': '1' } };
    if (answer === 'later' || answer === 'hang') return { hang: true };
    return {};
  });
  const daemonEnv = { PLATFORM_RETRY_SCHEDULE: '10,10', PLATFORM_DELIVERY_TIMEOUT: '120000' };
  const fileDaemon = await spawnDaemon(dir, { ...daemonEnv, PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password });
  const ids: Record<string, string> = {};
  let before: Listings;
  try {
    const admin = api(fileDaemon.url, tokenOf(await call(fileDaemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
    await publishExtension(admin, 'crm');
    await createWorkspace(admin, 'shop');
    await install(admin, 'shop', 'crm');
    await subscribeExternal(admin, 'shop', 'order.created', 'crm', subscriber.url);
    // More than a batch of events without deliveries, then the delivered ones, oldest first.
    for (let batch = 0; batch < 44; batch += 1) {
      const answers = await Promise.all(Array.from({ length: 25 }, (_, n) => admin.post('/api/workspaces/shop/events/publish', { eventKey: 'note.added', payload: { n: batch * 25 + n } })));
      assert.equal(answers.map((answer) => answer.status), answers.map(() => 200));
    }
    for (const answer of ['hang', 'later', 'fail-1', 'fail-2', 'ok-1', 'ok-2', 'ok-3']) {
      const published = await admin.post('/api/workspaces/shop/events/publish', { eventKey: 'order.created', payload: { answer: answer.replace(/-\d$/, '') } });
      assert.is(published.status, 200, published.text);
      ids[answer] = published.body.meta.eventId;
    }
    await waitFor('the dead letters', async () => (await admin.get('/api/admin/dead-letters')).body.meta.total === 2);
    await waitFor('three deliveries', async () => (await admin.get('/api/workspaces/shop/deliveries?status=SUCCEEDED')).body.data.length === 3);
    await waitFor('the second try of the delivery asked to wait', () => triesOf(subscriber.received, ids.later!) === 2);
    await waitFor('the hanging delivery', () => triesOf(subscriber.received, ids.hang!) === 1);
    before = await listings(admin);
    assert.equal(before.finished[0]!.map((record: { eventId: string }) => record.eventId), [ids['ok-3'], ids['ok-2'], ids['ok-1']]);
    assert.equal(before.finished[1]!.map((record: { status: string }) => record.status), ['DEAD', 'DEAD']);
    // Compared whole below: attempts with the request they sent and the headers of the answer.
    assert.ok(before.finished[0]![0].attempts[0].request.headers['webhook-signature'], 'set-up: an attempt with its request');
    assert.ok(before.finished[0]![0].attempts[0].response.headers.date, 'set-up: an attempt with the headers of the answer');
  } finally {
    fileDaemon.child.kill('SIGTERM');
    await fileDaemon.exited;
  }
  running = false;

  const url = await freshDatabase();
  const imported = await importInto(url, dir);
  assert.is(imported.code, 0, imported.stderr);
  for (const [kind, count] of [
    ['events', 1_107],
    ['delivery records', 7],
    // 3 delivered at once, 2 × 3 failed, the first try of the one asked to wait.
    ['delivery attempts', 10],
    ['pending deliveries', 2],
    ['dead letters', 2],
  ] as const) {
    assert.match(imported.stdout, new RegExp(`^${kind} +${count}$`, 'm'), `${kind} in\n${imported.stdout}`);
  }
  assert.not.match(imported.stdout, /left out/);

  const received = subscriber.received.length;
  const postgresDaemon = await spawnDaemon(dir, daemonEnv, ['--database-url', url]);
  try {
    const admin = api(postgresDaemon.url, tokenOf(await call(postgresDaemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
    const after = await listings(admin, before);
    assert.equal(after.events, before.events, 'the same events and pages');
    assert.equal(after.finished, before.finished, 'the same finished records, pages and cursors');
    assert.equal(after.deadLetters, before.deadLetters);
    assert.equal(after.failed, before.failed, 'a dead letter’s event with its record and every attempt');

    // What was pending is delivered by the PostgreSQL daemon, under the same delivery ids.
    const redelivered = await waitFor('the pending deliveries', () => subscriber.received.length >= received + 2 && subscriber.received.slice(received));
    assert.equal(redelivered.map((request) => request.json.id).sort(), [ids.hang, ids.later].sort());
    for (const request of redelivered) assert.is(request.headers['webhook-id'], before.pendingIds[request.json.id]);
    const later = await waitFor('the record of the delivery asked to wait', async () => {
      const [record] = (await admin.get(`/api/workspaces/shop/events/${ids.later}`)).body.data.deliveries;
      return record.status === 'SUCCEEDED' && record;
    });
    assert.equal(later.attempts.map((attempt: { number: number; outcome: string; httpStatus: number }) => [attempt.number, attempt.outcome, attempt.httpStatus]), [
      [1, 'RETRY', 503],
      [2, 'SUCCESS', 200],
    ]);

    // A dead letter is replayed, under its delivery id, its attempts numbered on.
    const letter = before.deadLetters.find((dead: { event: { id: string } }) => dead.event.id === ids['fail-1']);
    assert.is((await admin.post(`/api/admin/dead-letters/${letter.id}/replay`)).status, 202);
    const replayed = await waitFor('the replayed delivery', () => subscriber.received.slice(received).find((request) => request.json.id === ids['fail-1']));
    assert.is(replayed.headers['webhook-id'], letter.deliveryId);
    const record = await waitFor('the replayed record', async () => {
      const [found] = (await admin.get(`/api/workspaces/shop/events/${ids['fail-1']}`)).body.data.deliveries;
      return found.status === 'SUCCEEDED' && found;
    });
    assert.equal(record.attempts.map((attempt: { number: number }) => attempt.number), [1, 2, 3, 4]);
    assert.is((await admin.get(`/api/admin/dead-letters/${letter.id}/state`)).body.data.state, 'gone');

    // A new delivery is recorded after the imported ones.
    const published = await admin.post('/api/workspaces/shop/events/publish', { eventKey: 'order.created', payload: { answer: 'ok' } });
    const [newest] = (await admin.get('/api/workspaces/shop/deliveries?limit=1')).body.data;
    assert.is(newest.eventId, published.body.meta.eventId);
  } finally {
    postgresDaemon.child.kill('SIGTERM');
    await postgresDaemon.exited;
    await subscriber.close();
  }
});

/** How many requests of the event the subscriber has had. */
const triesOf = (received: ReceivedDelivery[], eventId: string) => received.filter((request) => request.json?.id === eventId).length;

interface Listings {
  /** Pages of the workspace's events. */
  events: Array<{ items: unknown[] }>;
  /** The finished records, newest first: three, then two more by the cursor. */
  finished: any[][];
  finishedCursor?: string;
  deadLetters: any[];
  failed: unknown;
  /** Delivery ids of the pending deliveries, by event id. */
  pendingIds: Record<string, string>;
}

/**
 * What a daemon lists of workspace shop. Given the listings of another daemon,
 * pages on with that daemon's delivery cursors, so that the two compare page
 * by page (event cursors are the backend's own).
 */
async function listings(admin: Api, other?: Listings): Promise<Listings> {
  const events: Listings['events'] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 3; page += 1) {
    const query = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const listed = await admin.get(`/api/workspaces/shop/events?limit=500${query}`);
    assert.is(listed.status, 200, listed.text);
    // Each event's delivery summary is live: a delivery pending on files may be done by the time PostgreSQL is listed
    // (the deliveries themselves are compared below, finished and pending apart).
    events.push({ items: listed.body.data.map(({ deliverySummary: _live, ...event }: { deliverySummary: unknown }) => event) });
    // Event cursors belong to the backend that made them: each daemon pages on with its own.
    cursor = listed.body.meta?.nextCursor;
  }
  assert.equal(events.map((page) => page.items.length), [500, 500, 107]);
  const first = await admin.get('/api/workspaces/shop/deliveries?limit=3');
  const finishedCursor = other?.finishedCursor ?? first.body.meta.nextCursor;
  const second = await admin.get(`/api/workspaces/shop/deliveries?limit=2&cursor=${encodeURIComponent(finishedCursor)}`);
  assert.is(second.status, 200, second.text);
  const deadLetters = (await admin.get('/api/admin/dead-letters')).body.data;
  const failed = (await admin.get(`/api/workspaces/shop/events/${deadLetters[0].event.id}`)).body.data;
  const pending = (await admin.get('/api/workspaces/shop/deliveries?status=PENDING')).body.data as Array<{ id: string; eventId: string }>;
  return {
    events,
    finished: [first.body.data, second.body.data],
    finishedCursor,
    deadLetters,
    failed,
    pendingIds: Object.fromEntries(pending.map((record) => [record.eventId, record.id])),
  };
}

test('db import keeps a dead letter whose event retention removed from the log, with the event copied from the letter', async () => {
  const dir = await tempDir();
  const files = await openFileStores(dir);
  const at = new Date().toISOString();
  const deadLetterIds: string[] = [];
  const eventIds: string[] = [];
  for (const n of [1, 2]) {
    const event = { id: randomUUID(), eventKey: 'order.created', tenantId: 'shop', actor: 'ana', publishedBy: 'user-1', payload: { n }, schemaVersion: null, occurredAt: at };
    eventIds.push(event.id);
    const delivery: Delivery = {
      id: `msg_${randomUUID().replaceAll('-', '')}`,
      event: CarriedEvent.of(event),
      depth: 1,
      subscriber: { subscriptionId: 'sub-1', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://127.0.0.1:9/hooks' },
      attempts: 1,
      nextAttemptAt: Date.now(),
      enqueuedAt: at,
      firstAttemptAt: at,
      lastError: { message: 'status 400', status: 400 },
      replayCount: 0,
    };
    await files.events.publish(event, [delivery]);
    const letter = { id: randomUUID(), deliveryId: delivery.id, event, subscriber: delivery.subscriber, attempts: 1, lastError: delivery.lastError!, firstAttemptAt: at, deadAt: at, replayCount: 0, depth: 1 };
    await files.deliveries.dead(delivery, { startedAt: at, durationMs: 2, outcome: 'FAILED', httpStatus: 400, error: 'status 400' }, letter);
    deadLetterIds.push(letter.id);
  }
  await files.close();
  // The first event gone from the log, as retention removes it while its dead letter stays.
  const [segment] = readdirSync(join(dir, 'events'));
  const lines = readFileSync(join(dir, 'events', segment!), 'utf8').split('\n');
  writeFileSync(join(dir, 'events', segment!), lines.slice(1).join('\n'));

  const url = await freshDatabase();
  const imported = await importInto(url, dir);
  assert.is(imported.code, 0, imported.stderr);
  for (const [kind, count] of [
    ['events', 1],
    ['events gone from the log, kept for their pending deliveries and dead letters', 1],
    ['delivery records', 2],
    ['dead letters', 2],
  ] as const) {
    assert.match(imported.stdout, new RegExp(`^${kind} +${count}$`, 'm'), `${kind} in\n${imported.stdout}`);
  }
  assert.not.match(imported.stdout, 'left out');
  const postgres = await openPostgres(url);
  try {
    assert.equal(new Set((await postgres.stores.deadLetters.matchingIds({}, null, 1_000)).letters.map((letter) => letter.id)), new Set(deadLetterIds));
    assert.is((await postgres.stores.events.find('shop', eventIds[0]!))?.id, eventIds[0], 'the removed event, copied from its letter');
    const [replayed] = await postgres.stores.deadLetters.replay([deadLetterIds[0]!], Date.now());
    assert.is(replayed?.event.id, eventIds[0], 'and the letter replays');
    const page = await listed(postgres.stores.events, 'shop', { limit: 10 }, { maxAgeMs: 86_400_000, maxPerWorkspace: 100 }, Date.now());
    assert.equal(page.items.map((event) => event.id), [eventIds[1], eventIds[0]], 'it stays the oldest');
  } finally {
    await postgres.close();
  }
});

test('db import keeps which delivery a redelivery sends again, finished or pending', async () => {
  const dir = await tempDir();
  const files = await openFileStores(dir);
  const at = new Date().toISOString();
  const event = { id: randomUUID(), eventKey: 'order.created', tenantId: 'shop', actor: 'ana', publishedBy: 'user-1', payload: { n: 1 }, schemaVersion: null, occurredAt: at };
  const deliveryOf = (redeliveryOf?: string): Delivery => ({
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    event: CarriedEvent.of(event),
    depth: 1,
    subscriber: { subscriptionId: 'sub-1', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://127.0.0.1:9/hooks' },
    attempts: 0,
    nextAttemptAt: Date.now(),
    enqueuedAt: at,
    firstAttemptAt: null,
    lastError: null,
    replayCount: 0,
    ...(redeliveryOf === undefined ? {} : { redeliveryOf }),
  });
  const original = deliveryOf();
  const delivered = deliveryOf(original.id);
  const pending = deliveryOf(delivered.id);
  const success = { startedAt: at, durationMs: 2, outcome: 'SUCCESS' as const, httpStatus: 200 };
  await files.events.publish(event, [original]);
  files.deliveries.succeeded(original, success);
  await files.deliveries.redeliver(delivered);
  files.deliveries.succeeded(delivered, success);
  await files.deliveries.redeliver(pending);
  await files.close();

  const url = await freshDatabase();
  const imported = await importInto(url, dir);
  assert.is(imported.code, 0, imported.stderr);
  assert.match(imported.stdout, /^pending deliveries +1$/m, imported.stdout);
  const postgres = await openPostgres(url);
  try {
    const found = async (id: string) => {
      const record = await postgres.stores.deliveries.find('shop', id);
      return [record?.status, record?.redeliveryOf];
    };
    assert.equal(await found(original.id), ['SUCCEEDED', undefined]);
    assert.equal(await found(delivered.id), ['SUCCEEDED', original.id]);
    assert.equal(await found(pending.id), ['PENDING', delivered.id]);
  } finally {
    await postgres.close();
  }
});

test('db import refuses a database that already holds data, and writes nothing', async () => {
  const url = await freshDatabase();
  assert.is((await importInto(url)).code, 0);
  const before = await rowCounts(url);
  const again = await importInto(url);
  assert.is(again.code, 1);
  assert.is(again.stdout, '');
  assert.is(again.stderr.trim().split('\n').length, 1, again.stderr);
  assert.match(again.stderr, /already holds data \(rows in [a-z_, ]*users[a-z_, ]*\); db import copies into an empty schema only; nothing was written/);
  assert.equal(await rowCounts(url), before);

  // One row in any table is enough.
  const other = await freshDatabase();
  assert.is((await runCli(['db', 'migrate', '--database-url', other])).code, 0);
  const client = new pg.Client({ connectionString: other });
  await client.connect();
  await client.query(`INSERT INTO ${SCHEMA}.revoked_tokens (jti, expires_at) VALUES ('left-over', 1)`);
  await client.end();
  const refused = await importInto(other);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, '(rows in revoked_tokens)');
  assert.equal(Object.values(await rowCounts(other)).reduce((sum, count) => sum + count, 0), 1 + (await rowCounts(other)).schema_migrations!);
});

test('db import that fails part-way leaves the database empty', async () => {
  const dir = await tempDir();
  cpSync(dataDir, dir, { recursive: true });
  // A line that is not JSON in chat.log, read after users, the catalog and workspaces were written.
  writeFileSync(join(dir, 'chat.log'), `not json\n${readFileSync(join(dir, 'chat.log'), 'utf8')}`);
  const url = await freshDatabase();
  const failed = await importInto(url, dir);
  assert.is(failed.code, 1);
  assert.match(failed.stderr, /chat\.log is corrupt at line 1; nothing was imported/);
  const counts = await rowCounts(url);
  delete counts.schema_migrations;
  assert.ok(Object.keys(counts).length >= 10, Object.keys(counts).join(', '));
  assert.equal(Object.values(counts).filter((count) => count > 0), [], JSON.stringify(counts));
});

test('a store-wide transaction (db import, keys rotate) stops what its stores started: no recurring timer outlives it', async () => {
  const { database } = await openMigratedDatabase({ url: await freshDatabase(), schema: SCHEMA }, ignore);
  // Intervals created meanwhile (the stores' lease renewal among them) that nothing cleared.
  const running = new Set<number>();
  const hook = createHook({
    init(asyncId, type, _trigger, resource) {
      if (type === 'Timeout' && (resource as { _repeat?: number | null })._repeat) running.add(asyncId);
    },
    destroy: (asyncId) => running.delete(asyncId),
  });
  try {
    hook.enable();
    const users = await inOneTransaction(database, async (stores) => stores.users.count());
    assert.is(users, 0);
    const failed = await inOneTransaction(database, async () => {
      throw new Error('rolled back');
    }).catch((error: Error) => error.message);
    assert.is(failed, 'rolled back', 'the error of the work, not one from closing the stores');
    // A cleared timer's destroy hook runs on a later turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    assert.is(running.size, 0, `${running.size} intervals still running`);
  } finally {
    hook.disable();
    await database.close();
  }
});

test('keys rotate on PostgreSQL with the key file: every sealed value opens with the new key and not with the old', async () => {
  const dir = await tempDir();
  cpSync(dataDir, dir, { recursive: true });
  const url = await freshDatabase();
  assert.is((await importInto(url, dir)).code, 0);
  const old = await SecretBox.open(dir, null);
  const before = await sealedValues(url);
  assert.is(before.length, 4, 'two signing secrets, a URL, a SECRET field');
  const clear = before.map((sealed) => old.open(sealed));

  const rotated = await runCli(['keys', 'rotate', '--data-dir', dir, '--database-url', url]);
  assert.is(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, `re-encrypted 4 secrets in schema ${SCHEMA} under a new master key in ${dir}/master.key`);
  const current = await SecretBox.open(dir, null);
  assert.is(current.keys.length, 1, 'the keyring is cut to the new key');
  assert.not.equal(current.keys[0], old.keys[0]);
  const after = await sealedValues(url);
  assert.equal(after.map((sealed) => current.open(sealed)), clear);
  assert.equal(after.map((sealed) => opensWith(old, sealed)), after.map(() => null));
});

test('keys rotate on PostgreSQL with PLATFORM_MASTER_KEY re-seals under its first key', async () => {
  const url = await freshDatabase();
  assert.is((await importInto(url)).code, 0);
  const old = await SecretBox.open(dataDir, null);
  const clear = (await sealedValues(url)).map((sealed) => old.open(sealed));
  const next = old.withNewKey();
  const [newKey, oldKey] = next.keys.map((key) => key.toString('base64'));

  const rotated = await runCli(['keys', 'rotate', '--database-url', url], { env: { PLATFORM_MASTER_KEY: `${newKey},${oldKey}` } });
  assert.is(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, 're-encrypted 4 secrets in schema platform under the first key of PLATFORM_MASTER_KEY');
  const after = await sealedValues(url);
  assert.equal(after.map((sealed) => next.currentOnly().open(sealed)), clear);
  assert.equal(after.map((sealed) => opensWith(old, sealed)), after.map(() => null));
  assert.equal(readFileSync(join(dataDir, 'master.key'), 'utf8').trim(), oldKey, 'the data directory is not touched');

  const again = await runCli(['keys', 'rotate', '--database-url', url], { env: { PLATFORM_MASTER_KEY: newKey! } });
  assert.is(again.code, 0, again.stderr);
  assert.equal(await sealedValues(url), after, 'values already under the current key are left as they are');
});

test.run();
