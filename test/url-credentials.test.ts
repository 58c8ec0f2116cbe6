import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from './helpers/cli.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';
import { filesOnly } from './helpers/postgres.js';

const USER = 'hookuser';
const PASSWORD = 'pa55-w0rd-xyzzy';
const BASIC = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
const DATA_FILES = ['workspaces.json', 'outbox.log', 'dead-letters.json'];

let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let withCredentials: string;
let masked: string;

const read = (name: string) => readFileSync(join(t.dataDir, name), 'utf8');

function assertNowhereInClear(where: string): void {
  for (const name of DATA_FILES) assert.not.match(read(name), PASSWORD, `${where}: ${name}`);
  assert.not.match(t.logs.join(''), PASSWORD, `${where}: log`);
}

async function deadLetters(): Promise<any[]> {
  return (await admin.get('/api/admin/dead-letters?workspaceId=acme')).body.data;
}

test.before(async () => {
  subscriber = await startSubscriber();
  const { host } = new URL(subscriber.url);
  withCredentials = `http://${USER}:${PASSWORD}@${host}/hooks`;
  masked = `http://****@${host}/hooks`;
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await workspaceWith(admin, 'acme', 'crm');
});
test.after(async () => {
  await t.destroy();
  await subscriber.close();
});

filesOnly(test)('URL credentials are shown masked, stored sealed, and still used for deliveries (files only: reads workspaces.json)', async () => {
  const created = await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', withCredentials);
  assert.is((created as any).serviceBaseUrl, masked);
  const listed = await admin.get('/api/workspaces/acme/subscriptions');
  assert.is(listed.body.data[0].serviceBaseUrl, masked);
  assert.not.match(listed.text, PASSWORD);
  assert.match(read('workspaces.json'), masked);

  const duplicate = await admin.post('/api/workspaces/acme/subscriptions', {
    eventKey: 'crm.deal.closed',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: withCredentials,
  });
  assert.is(duplicate.status, 409, 'the same URL with the same credentials is a duplicate');

  assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' })).status, 200);
  const [delivery] = await subscriber.waitForCount(1);
  assert.is(delivery!.path, '/hooks/events');
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
  assert.not.match(shown.text, PASSWORD);
  assertNowhereInClear('after deliveries');
});

filesOnly(test)('data written with clear credentials is sealed and masked when the daemon opens it (files only: writes workspaces.json)', async () => {
  // A delivery left pending at the stop: the subscriber hangs until the daemon aborts it.
  subscriber.answer(() => ({ hang: true }));
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  await waitFor('the hanging delivery', () => subscriber.received.length >= 3);
  await t.stop();

  // As an older version wrote them: the URL in clear everywhere.
  const workspaces = JSON.parse(read('workspaces.json'));
  for (const subscription of workspaces.subscriptions) {
    subscription.serviceBaseUrl = withCredentials;
    delete subscription.sealedServiceBaseUrl;
  }
  writeFileSync(join(t.dataDir, 'workspaces.json'), JSON.stringify(workspaces));
  for (const name of ['outbox.log', 'dead-letters.json']) writeFileSync(join(t.dataDir, name), read(name).replaceAll(masked, withCredentials));
  for (const name of DATA_FILES) assert.match(read(name), PASSWORD, `set-up: ${name} in clear`);

  subscriber.answer(() => ({}));
  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
  const [resumed] = await waitFor('the resumed delivery', () => subscriber.received.length >= 4 && subscriber.received.slice(3));
  assert.is(resumed!.headers.authorization, BASIC, 'the pending delivery still carries the credentials');
  assertNowhereInClear('after the start');
  assert.is((await admin.get('/api/workspaces/acme/subscriptions')).body.data[0].serviceBaseUrl, masked);
  assert.is((await deadLetters())[0].subscriber.serviceBaseUrl, masked);
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
  assert.not.match(read('workspaces.json'), PASSWORD);

  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
  const before = subscriber.received.length;
  await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' });
  const [delivery] = await waitFor('the delivery', () => subscriber.received.length > before && subscriber.received.slice(before));
  assert.is(delivery!.headers.authorization, BASIC);
});

test.run();
