import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from './helpers/cli.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';
import { filesOnly, onDatabaseOf, postgresOnly, TEST_BACKEND } from './helpers/postgres.js';
import { redactSecrets } from '../src/daemon/dispatch/url-credentials.js';

const USER = 'hookuser';
const PASSWORD = 'pa55-w0rd-xyzzy';
const API_KEY = 'qs-k3y-in-the-url';
const BASIC = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
const DATA_FILES = ['workspaces.json', 'outbox.log', 'dead-letters.log', 'deliveries.log'];
const SECRETS = [PASSWORD, API_KEY];

let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let withCredentials: string;
let masked: string;
let signingSecret: string;

const read = (name: string) => readFileSync(join(t.dataDir, name), 'utf8');
/** Runs SQL on the daemon's own database (the PostgreSQL pass). */
const onDatabase = <T>(run: (client: pg.Client) => Promise<T>): Promise<T> => onDatabaseOf(t.dataDir, run);

/** Everything the daemon stored about subscriptions and deliveries, as text. */
async function storedText(): Promise<Record<string, string>> {
  if (TEST_BACKEND === 'files') return Object.fromEntries(DATA_FILES.map((name) => [name, read(name)]));
  return onDatabase(async (client) => {
    const tables: Record<string, string> = {};
    for (const table of ['subscriptions', 'deliveries', 'delivery_attempts']) {
      tables[table] = (await client.query(`SELECT coalesce(json_agg(x)::text, '') AS text FROM platform.${table} x`)).rows[0].text;
    }
    return tables;
  });
}

async function assertNowhereInClear(where: string): Promise<void> {
  const stored = await storedText();
  for (const secret of SECRETS) {
    for (const [name, text] of Object.entries(stored)) assert.not.ok(text.includes(secret), `${where}: ${secret} in ${name}`);
    assert.not.ok(t.logs.join('').includes(secret), `${where}: ${secret} in the log`);
  }
}

async function deadLetters(): Promise<any[]> {
  return (await admin.get('/api/admin/dead-letters?workspaceId=acme')).body.data;
}

test.before(async () => {
  subscriber = await startSubscriber();
  const { host } = new URL(subscriber.url);
  withCredentials = `http://${USER}:${PASSWORD}@${host}/hooks?api_key=${API_KEY}&v=2`;
  masked = `http://****@${host}/hooks?****`;
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await workspaceWith(admin, 'acme', 'crm');
});
test.after(async () => {
  await t.destroy();
  await subscriber.close();
});

test('URL credentials and query string are shown masked, stored sealed, and still used for deliveries', async () => {
  const created = await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', withCredentials);
  signingSecret = created.signingSecret;
  assert.is((created as any).serviceBaseUrl, masked);
  assert.is((created as any).deliveryUrl, masked.replace('/hooks?', '/hooks/events?'));
  const listed = await admin.get('/api/workspaces/acme/subscriptions');
  assert.is(listed.body.data[0].serviceBaseUrl, masked);
  for (const secret of SECRETS) assert.not.ok(listed.text.includes(secret));

  const duplicate = await admin.post('/api/workspaces/acme/subscriptions', {
    eventKey: 'crm.deal.closed',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: withCredentials,
  });
  assert.is(duplicate.status, 409, 'the same URL with the same credentials is a duplicate');

  assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' })).status, 200);
  const [delivery] = await subscriber.waitForCount(1);
  assert.is(delivery!.path, `/hooks/events?api_key=${API_KEY}&v=2`, 'the real query string reaches the subscriber');
  assert.is(delivery!.headers.authorization, BASIC, 'the real credentials reach the subscriber');

  // A failing delivery: its dead letter, journal and log lines show the URL masked.
  subscriber.answer(() => ({ status: 400 }));
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  const [letter] = await waitFor('the dead letter', async () => {
    const list = await deadLetters();
    return list.length > 0 && list;
  });
  assert.is(letter.subscriber.serviceBaseUrl, masked);
  const shown = await admin.get(`/api/admin/dead-letters/${letter.id}`);
  for (const secret of SECRETS) assert.not.ok(shown.text.includes(secret));
  await assertNowhereInClear('after deliveries');
});

test('a URL with a query string only, set by PATCH, is shown as ?**** and delivered to in full', async () => {
  subscriber.answer(() => ({}));
  const [subscription] = (await admin.get('/api/workspaces/acme/subscriptions')).body.data;
  const { host } = new URL(subscriber.url);
  const changed = await admin.patch(`/api/workspaces/acme/subscriptions/${subscription.id}`, {
    serviceBaseUrl: `http://${host}/moved/?token=${API_KEY}`,
  });
  assert.is(changed.status, 200, changed.text);
  assert.is(changed.body.data.serviceBaseUrl, `http://${host}/moved/?****`);
  assert.is(changed.body.data.deliveryUrl, `http://${host}/moved/events?****`);
  const before = subscriber.received.length;
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  const [delivery] = await waitFor('the delivery', () => subscriber.received.length > before && subscriber.received.slice(before));
  assert.is(delivery!.path, `/moved/events?token=${API_KEY}`);
  assert.is(delivery!.headers.authorization, undefined);
  await assertNowhereInClear('after the change');

  // Back to the URL the next tests expect.
  assert.is((await admin.patch(`/api/workspaces/acme/subscriptions/${subscription.id}`, { serviceBaseUrl: withCredentials })).status, 200);
});

/** The response excerpts of an event's deliveries, as `client` sees them on the event's page and in the listing. */
async function excerptsOf(client: Api, eventId: string): Promise<string[]> {
  const shown = await waitFor('the recorded attempt', async () => {
    const page = await client.get(`/api/workspaces/acme/events/${eventId}`);
    return page.body.data.deliveries[0]?.attempts.length > 0 && page;
  });
  const listed = await client.get('/api/workspaces/acme/deliveries?limit=500');
  const excerpts = [shown.body.data.deliveries[0].attempts[0].responseExcerpt];
  excerpts.push(...listed.body.data.filter((record: any) => record.eventId === eventId).flatMap((record: any) => record.attempts.map((a: any) => a.responseExcerpt)));
  for (const text of [shown.text, listed.text]) {
    for (const secret of [...SECRETS, signingSecret, BASIC]) assert.not.ok(text.includes(secret), `${secret} shown`);
  }
  return excerpts;
}

test('a subscriber that echoes its request shows nobody its credentials in responseExcerpt', async () => {
  const member = await createUser(t, 'member@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/acme/members/${member.id}`)).status, 200);
  const signingKey = signingSecret.slice('whsec_'.length);
  subscriber.answer((request) => ({
    body: JSON.stringify({ path: request.path, headers: request.headers, configured: { signingSecret, signingKey, password: PASSWORD } }),
  }));
  const published = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  for (const client of [member, admin]) {
    for (const excerpt of await excerptsOf(client, published.body.meta.eventId)) {
      assert.match(excerpt, '"authorization":"Basic ****"');
      assert.match(excerpt, '"path":"/hooks/events?****"');
      assert.match(excerpt, '"signingSecret":"****","signingKey":"****","password":"****"');
    }
  }

  // The excerpt ends 2 KiB in, in the middle of the password: what is left of it is masked too.
  subscriber.answer(() => ({ body: `${'x'.repeat(2048 - 6)}${PASSWORD}` }));
  const cut = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  const [excerpt] = await excerptsOf(member, cut.body.meta.eventId);
  assert.is(excerpt, `${'x'.repeat(2048 - 6)}****`);
  await assertNowhereInClear('after echoes');
  subscriber.answer(() => ({}));
});

filesOnly(test)('data written with clear credentials is sealed and masked when the daemon opens it (files only: writes workspaces.json)', async () => {
  // A delivery left pending at the stop: the subscriber hangs until the daemon aborts it.
  subscriber.answer(() => ({ hang: true }));
  const before = subscriber.received.length;
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  await waitFor('the hanging delivery', () => subscriber.received.length > before);
  await t.stop();

  // As an older version wrote them: the URL in clear everywhere.
  const workspaces = JSON.parse(read('workspaces.json'));
  for (const subscription of workspaces.subscriptions) {
    subscription.serviceBaseUrl = withCredentials;
    delete subscription.sealedServiceBaseUrl;
  }
  writeFileSync(join(t.dataDir, 'workspaces.json'), JSON.stringify(workspaces));
  // Dead letters as one JSON document (dead-letters.json), which the start migrates into dead-letters.log.
  const letters = read('dead-letters.log').trim().split('\n').map((line) => JSON.parse(line).letter);
  writeFileSync(join(t.dataDir, 'dead-letters.json'), JSON.stringify({ schemaVersion: 1, deadLetters: letters }));
  rmSync(join(t.dataDir, 'dead-letters.log'));
  for (const name of ['outbox.log', 'dead-letters.json']) writeFileSync(join(t.dataDir, name), read(name).replaceAll(masked, withCredentials));
  for (const name of ['workspaces.json', 'outbox.log', 'dead-letters.json']) {
    for (const secret of SECRETS) assert.ok(read(name).includes(secret), `set-up: ${secret} in clear in ${name}`);
  }

  subscriber.answer(() => ({}));
  const resumedFrom = subscriber.received.length;
  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
  const [resumed] = await waitFor('the resumed delivery', () => subscriber.received.length > resumedFrom && subscriber.received.slice(resumedFrom));
  assert.is(resumed!.headers.authorization, BASIC, 'the pending delivery still carries the credentials');
  assert.is(resumed!.path, `/hooks/events?api_key=${API_KEY}&v=2`, 'and the query string');
  await assertNowhereInClear('after the start');
  assert.is((await admin.get('/api/workspaces/acme/subscriptions')).body.data[0].serviceBaseUrl, masked);
  assert.is((await deadLetters())[0].subscriber.serviceBaseUrl, masked);
  assert.not.ok(existsSync(join(t.dataDir, 'dead-letters.json')), 'dead-letters.json is migrated away');
});

postgresOnly(test)('a database written with clear query strings is masked by its migration and sealed at the start (PostgreSQL only: edits rows)', async () => {
  await t.stop();
  // As an older version left it: the query string in clear in the subscription (whose user information it masked and
  // sealed with the rest) and the URL in clear in its deliveries, migration 9 not applied.
  const { host } = new URL(subscriber.url);
  await onDatabase(async (client) => {
    await client.query('UPDATE platform.subscriptions SET service_base_url = $1', [`http://****@${host}/hooks?api_key=${API_KEY}&v=2`]);
    await client.query('UPDATE platform.deliveries SET service_base_url = $1 WHERE service_base_url IS NOT NULL', [withCredentials]);
    await client.query('DELETE FROM platform.schema_migrations WHERE version = 9');
  });
  const stored = await storedText();
  for (const table of ['subscriptions', 'deliveries']) assert.ok(stored[table]!.includes(API_KEY), `set-up: ${table} in clear`);

  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
  await assertNowhereInClear('after the start');
  assert.is((await admin.get('/api/workspaces/acme/subscriptions')).body.data[0].serviceBaseUrl, masked);
  assert.is((await deadLetters())[0].subscriber.serviceBaseUrl, masked);
  subscriber.answer(() => ({}));
  const before = subscriber.received.length;
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  const [delivery] = await waitFor('the delivery', () => subscriber.received.length > before && subscriber.received.slice(before));
  assert.is(delivery!.path, `/hooks/events?api_key=${API_KEY}&v=2`);
  assert.is(delivery!.headers.authorization, BASIC);
});

filesOnly(test)('platform keys rotate re-seals URL credentials; deliveries still use them (files only: the offline rotation rewrites workspaces.json)', async () => {
  await t.stop();
  const sealedBefore = JSON.parse(read('workspaces.json')).subscriptions[0].sealedServiceBaseUrl;
  assert.match(sealedBefore, /^enc:v1:/);
  const rotated = await runCli(['keys', 'rotate', '--data-dir', t.dataDir]);
  assert.is(rotated.code, 0, rotated.stderr);
  const sealedAfter = JSON.parse(read('workspaces.json')).subscriptions[0].sealedServiceBaseUrl;
  assert.match(sealedAfter, /^enc:v1:/);
  assert.is.not(sealedAfter.split(':')[2], sealedBefore.split(':')[2], 'sealed under the new key');
  for (const secret of SECRETS) assert.not.ok(read('workspaces.json').includes(secret));

  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
  const before = subscriber.received.length;
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  const [delivery] = await waitFor('the delivery', () => subscriber.received.length > before && subscriber.received.slice(before));
  assert.is(delivery!.headers.authorization, BASIC);
  assert.is(delivery!.path, `/hooks/events?api_key=${API_KEY}&v=2`);
});

// Last: it leaves a clear key in a recorded excerpt, as an earlier version did.
test('an excerpt recorded with credentials by an earlier version is shown masked', async () => {
  await t.stop();
  // As an earlier version recorded it: the key in clear in the excerpt, where the echoed path ends in an escaped quote
  // (the request's URL, which no version recorded in clear, ends in a plain one).
  const [echoedMasked, echoedInClear] = ['events?****\\"', `events?api_key=${API_KEY}&v=2\\"`];
  if (TEST_BACKEND === 'files') {
    writeFileSync(join(t.dataDir, 'deliveries.log'), read('deliveries.log').replaceAll(echoedMasked, echoedInClear));
  } else {
    await onDatabase((client) =>
      client.query(`UPDATE platform.delivery_attempts SET attempt = replace(attempt::text, $1, $2)::json`, [echoedMasked, echoedInClear]),
    );
  }
  const stored = Object.values(await storedText()).join('');
  assert.ok(stored.includes(`api_key=${API_KEY}`), 'set-up: the key in clear in a recorded excerpt');

  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
  const member = await t.as('member@example.test', 'user-password-1');
  const listed = await member.get('/api/workspaces/acme/deliveries?limit=500');
  assert.is(listed.status, 200);
  assert.match(listed.text, 'events?****');
  assert.not.ok(listed.text.includes(API_KEY));
});

test('a secret cut at the end of a text is masked from its longest beginning there, however often that beginning repeats', () => {
  const secret = 'abcdabcdXYZ1';
  assert.is(redactSecrets('hello abcdabcd', [secret]), 'hello ****');
  assert.is(redactSecrets('hello abcdab', [secret]), 'hello ****');
  assert.is(redactSecrets('abcd then abcdabc', [secret]), 'abcd then ****');
  assert.is(redactSecrets('hello abc', [secret]), 'hello abc', 'fewer than four characters of a secret are no sign of one');
  assert.is(redactSecrets(`one ${secret} two`, [secret]), 'one **** two');
});

test.run();
