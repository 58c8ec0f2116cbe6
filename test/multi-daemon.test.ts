import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MIGRATIONS } from '../src/daemon/store/postgres/migrations/index.js';
import { runCli } from './helpers/cli.js';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace, publishExtension } from './helpers/fixtures.js';
import { api, type Api } from './helpers/http.js';
import { freshDatabase } from './helpers/postgres.js';
import { openStream, type Item } from './helpers/streams.js';
import { waitFor } from './helpers/wait.js';

// PostgreSQL only (npm test runs it on the PostgreSQL pass): several daemons share one database.
// Each daemon has a data directory of its own and the same master key, as on several machines.

const masterKey = randomBytes(32).toString('base64');
let url: string;
let one: TestDaemon;
let two: TestDaemon;

const onDatabase = (databaseUrl: string) => ({ database: { url: databaseUrl, schema: 'platform' }, masterKey });

test.before(async () => {
  url = await freshDatabase();
  one = await startTestDaemon(onDatabase(url));
  two = await startTestDaemon(onDatabase(url));
});
test.after(async () => {
  await one.destroy();
  await two.destroy();
});

test('a user created on one daemon logs in on the other, and the session of one is valid on the other', async () => {
  const made = await createUser(one, 'across@example.test');
  const onTwo = await two.as('across@example.test', made.password);
  assert.is((await onTwo.get('/api/auth/me')).body.data.id, made.id);
  assert.is((await api(two.url, made.token).get('/api/auth/me')).status, 200, 'a token signed by one verifies on two');
});

test('a token revoked on one daemon is refused by the other at once', async () => {
  const user = await createUser(one, 'revoked@example.test');
  assert.is((await api(two.url, user.token).get('/api/auth/me')).status, 200);
  assert.is((await user.post('/api/auth/logout')).status, 200);
  assert.is((await api(two.url, user.token).get('/api/auth/me')).status, 401);
});

test('an API token revoked on one daemon, or rotated installation token, is refused by the other at once', async () => {
  const user = await createUser(one, 'scripted@example.test');
  const created = await user.post('/api/auth/tokens', { name: 'script', scopes: ['events:read'] });
  assert.is(created.status, 201, created.text);
  const onTwo = api(two.url, created.body.data.token);
  assert.is((await onTwo.get('/api/auth/me')).status, 200);
  assert.is((await user.delete(`/api/auth/tokens/${created.body.data.id}`)).status, 204);
  assert.is((await onTwo.get('/api/auth/me')).status, 401);

  const admin = await one.admin();
  await publishExtension(admin, 'sender', '1.0.0', {
    manifest: { manifestVersion: 1, extensionKey: 'sender', version: '1.0.0', publishes: [{ eventKey: 'sender.sent', schemaVersion: '1', schema: {} }] },
  });
  await createWorkspace(admin, 'tokens-across');
  const installed = await admin.post('/api/workspaces/tokens-across/extensions', { extensionKey: 'sender' });
  assert.is(installed.status, 201, installed.text);
  const extension = api(two.url, installed.body.data.installationToken);
  assert.is((await extension.post('/api/workspaces/tokens-across/events/publish', { eventKey: 'sender.sent', payload: {} })).status, 200);
  assert.is((await admin.post('/api/workspaces/tokens-across/extensions/sender/rotate-token')).status, 200);
  assert.is((await extension.post('/api/workspaces/tokens-across/events/publish', { eventKey: 'sender.sent', payload: {} })).status, 401);
});

test('a user disabled on one daemon is refused by the other at once', async () => {
  const user = await createUser(one, 'disabled@example.test');
  assert.is((await api(two.url, user.token).get('/api/auth/me')).status, 200);
  assert.is((await (await one.admin()).patch(`/api/admin/users/${user.id}`, { active: false })).status, 200);
  const refused = await api(two.url, user.token).get('/api/auth/me');
  assert.is(refused.status, 403);
  assert.is(refused.body.code, 'ACCOUNT_DISABLED');
});

test('a role taken on one daemon is refused by the other at once', async () => {
  const user = await createUser(one, 'demoted@example.test', { roles: ['ADMIN', 'USER'] });
  assert.is((await api(two.url, user.token).get('/api/admin/users')).status, 200);
  assert.is((await (await one.admin()).patch(`/api/admin/users/${user.id}`, { roles: ['USER'] })).status, 200);
  assert.is((await api(two.url, user.token).get('/api/admin/users')).status, 403);
});

test('an extension published on one daemon is found by search on the other within 1 s', async () => {
  await publishExtension(await one.admin(), 'crosswind', '1.0.0');
  const found = await waitFor(
    'the extension in the other daemon\'s search',
    async () => {
      const result = await two.anon.get('/api/marketplace/extensions?search=crosswind');
      return result.body.data.some((item: { extensionKey: string }) => item.extensionKey === 'crosswind');
    },
    1_000,
  );
  assert.ok(found);
});

test('a membership removed on one daemon is refused by the other at once', async () => {
  const admin = await one.admin();
  await createWorkspace(admin, 'shared');
  const member = await createUser(one, 'member@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/shared/members/${member.id}`)).status, 200);
  assert.is((await api(two.url, member.token).get('/api/workspaces/shared')).status, 200);
  assert.is((await admin.delete(`/api/admin/workspaces/shared/members/${member.id}`)).status, 204);
  assert.is((await api(two.url, member.token).get('/api/workspaces/shared')).status, 403);
});

const ids = (items: Item[]) => items.map((item) => item.id);
const publishStep = async (on: Api, workspace: string, n: number) => {
  const published = await on.post(`/api/workspaces/${workspace}/events/publish`, { eventKey: 'app.step', payload: { n } });
  assert.is(published.status, 200, published.text);
  return published.body.meta.eventId as string;
};

test('a stream on one daemon shows activity on the other; Last-Event-ID resumes on the other with exactly what was missed', async () => {
  const onOne = await one.admin();
  const onTwo = api(two.url, onOne.token);
  await createWorkspace(onOne, 'streamed');
  const path = '/api/workspaces/streamed/stream';
  // Follows the workspace on two throughout: what two has heard, in the order it hands items on.
  const observer = await openStream(two.url, path, onOne.token);
  const client = await openStream(one.url, path, onOne.token);

  const seen = [await publishStep(onTwo, 'streamed', 1), await publishStep(onOne, 'streamed', 2), await publishStep(onTwo, 'streamed', 3)];
  await waitFor('the items of both daemons on the stream of one', () => client.items.length === 3 || undefined);
  assert.equal(client.items.map((item) => item.data.id).sort(), [...seen].sort());
  client.close();
  const lastSeen = client.items[2]!.id;

  const missed = [await publishStep(onTwo, 'streamed', 4), await publishStep(onOne, 'streamed', 5), await publishStep(onTwo, 'streamed', 6)];
  await waitFor('two has heard every item', () => observer.items.length === 6 || undefined);
  assert.equal(ids(observer.items.slice(0, 3)), ids(client.items), 'one id per item on every daemon, in one order');

  const resumed = await openStream(two.url, path, onOne.token, lastSeen);
  const live = await publishStep(onOne, 'streamed', 7);
  await waitFor('the missed items and the live one', () => resumed.items.some((item) => item.data.id === live) || undefined);
  await waitFor('the live item heard by two', () => observer.items.length === 7 || undefined);
  assert.equal(ids(resumed.items), ids(observer.items.slice(3)));
  assert.equal(resumed.items.map((item) => item.data.id).sort(), [...missed, live].sort());
  for (let index = 1; index < observer.items.length; index += 1) assert.ok(observer.items[index]!.id > observer.items[index - 1]!.id, 'ids increase');
  resumed.close();
  observer.close();
});

test('a daemon started later resumes a client from the shared history, which keeps the latest 1,000 items', async () => {
  const onOne = await one.admin();
  await createWorkspace(onOne, 'crowded');
  const watcher = await openStream(one.url, '/api/workspaces/crowded/stream', onOne.token);
  const total = 1_010;
  for (let from = 0; from < total; from += 10) await Promise.all(Array.from({ length: 10 }, (_, n) => publishStep(onOne, 'crowded', from + n)));
  await waitFor('every item on the watching stream', () => watcher.items.length === total || undefined);
  watcher.close();

  const later = await startTestDaemon(onDatabase(url));
  try {
    const resumed = await openStream(later.url, '/api/workspaces/crowded/stream', onOne.token, watcher.items[0]!.id);
    await waitFor('the kept items', () => resumed.items.length >= 1_000 || undefined);
    assert.equal(ids(resumed.items), ids(watcher.items.slice(-1_000)));
    resumed.close();
  } finally {
    await later.destroy();
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT count(*)::int AS kept FROM platform.activity');
    assert.is(rows[0].kept, 1_000, 'the table is trimmed to the latest 1,000');
  } finally {
    await client.end();
  }
});

test('requests with one Idempotency-Key sent to both daemons at once publish once, and every answer names that event', async () => {
  const onOne = await one.admin();
  const onTwo = api(two.url, onOne.token);
  await createWorkspace(onOne, 'keyed');
  const body = { eventKey: 'app.step', payload: { n: 1 } };
  const send = (on: Api) => on.post('/api/workspaces/keyed/events/publish', body, { headers: { 'idempotency-key': 'across-daemons' } });
  const answers = await Promise.all(Array.from({ length: 50 }, (_, n) => send(n % 2 === 0 ? onOne : onTwo)));
  for (const answer of answers) assert.is(answer.status, 200, answer.text);
  const listed = (await onTwo.get('/api/workspaces/keyed/events')).body.data.map((event: { id: string }) => event.id);
  assert.is(listed.length, 1, 'published once');
  assert.equal(new Set(answers.map((answer) => answer.body.meta.eventId)), new Set(listed));
  assert.is(answers.filter((answer) => answer.body.meta.idempotentReplay !== true).length, 1, 'one publish, the rest replays');
  const otherBody = await onTwo.post('/api/workspaces/keyed/events/publish', { ...body, payload: { n: 2 } }, { headers: { 'idempotency-key': 'across-daemons' } });
  assert.is(otherBody.status, 409);
  assert.is(otherBody.body.code, 'IDEMPOTENCY_KEY_REUSED');
});

test('two daemons started at once on an empty database both come up: migrated once, one first administrator', async () => {
  const empty = await freshDatabase();
  const both = await Promise.all([startTestDaemon(onDatabase(empty)), startTestDaemon(onDatabase(empty))]);
  try {
    const created = both.filter((daemon) => daemon.daemon.firstAdmin !== null);
    assert.is(created.length, 1, 'one of them created the administrator');
    for (const daemon of both) {
      assert.is((await daemon.anon.get('/api/health/ready')).status, 200);
      assert.is((await daemon.admin()).token.length > 0, true, 'the administrator logs in on each');
    }
    const users = (await (await both[1]!.admin()).get('/api/admin/users')).body.data as Array<{ email: string }>;
    assert.equal(
      users.map((user) => user.email),
      [ADMIN.email],
    );
    const client = new pg.Client({ connectionString: empty });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT version FROM platform.schema_migrations ORDER BY version');
      assert.equal(
        rows.map((row) => Number(row.version)),
        MIGRATIONS.map((migration) => migration.version),
        'each migration recorded once',
      );
    } finally {
      await client.end();
    }
  } finally {
    await Promise.all(both.map((daemon) => daemon.destroy()));
  }
});

test('three `platform db migrate` at once on an empty database: each migration applied by exactly one, up to the last', async () => {
  const empty = await freshDatabase();
  const runs = await Promise.all([1, 2, 3].map(() => runCli(['db', 'migrate'], { env: { PLATFORM_DATABASE_URL: empty } })));
  const applied: number[] = [];
  for (const run of runs) {
    assert.is(run.code, 0, run.stderr);
    const line = /^applied (.*) to schema platform$/m.exec(run.stdout)?.[1];
    if (line) applied.push(...[...line.matchAll(/(\d+) \(/g)].map((match) => Number(match[1])));
    else assert.match(run.stdout, 'is up to date');
  }
  assert.equal(
    applied.sort((a, b) => a - b),
    MIGRATIONS.map((migration) => migration.version),
    'every migration, the last included, applied once in all',
  );
});

test.run();
