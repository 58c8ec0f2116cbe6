import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DaemonConfig } from '../src/daemon/config.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { configureExtension, createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import { signGithub } from '../src/handlers/webhooks/sign.js';
import { call, type Api, type HttpResult } from './helpers/http.js';
import { filesOnly, freshDatabase, postgresOnly } from './helpers/postgres.js';
import { hasValidSignature, startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';
import { tempDir } from './helpers/temp.js';
import { fillDisk, mountSmallDisk, needsSmallDisk, withSmallDisk } from './helpers/tmpfs.js';
import { waitFor } from './helpers/wait.js';

// A request answered with an error has changed nothing, also when storage
// fails after the request was validated (publish, inbound webhooks that
// publish, installations, subscriptions, configuration): on files a disk that
// fills up (under the whole data directory, or under one of the two files a
// publish writes), on PostgreSQL a connection lost in the middle of the write.
// Nothing shows through the API at once, nor after a restart; a retry of a
// refused publish publishes once.

/**
 * Large enough that its event line and outbox record need fresh pages: tmpfs
 * allocates whole pages, so a small append could still land in the free tail
 * of a file's last page on a disk that is otherwise full.
 */
const BIG_PAYLOAD = { report: 'x'.repeat(16 * 1024) };
/** What every answer with an error must not show: the secrets a write carried or the store holds. */
const SECRET_VALUE = 'config-secret-value-1';
const WEBHOOK_SECRET = 'webhook-secret-value-1';
/** A GitHub call to weather's declarative webhook, which publishes weather.updated into acme; as big as BIG_PAYLOAD, for the same reason. */
const HOOK_BODY = JSON.stringify({ hook: 'y'.repeat(16 * 1024) });

const EVENTS = '/api/workspaces/acme/events?limit=1000';
const DELIVERIES = '/api/workspaces/acme/deliveries?limit=500';
const STATE = [
  '/api/marketplace/extensions/weather',
  '/api/workspaces/acme/extensions',
  '/api/workspaces/acme/subscriptions',
  '/api/admin/marketplace/extensions/weather/config',
  EVENTS,
  DELIVERIES,
];

/** What the API shows of everything the writes below could touch; events and deliveries by id, as payloads would flood a failure message. */
async function stateOf(admin: Api): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (const path of STATE) {
    const result = await admin.get(path);
    assert.is(result.status, 200, `GET ${path}: ${result.text}`);
    const items = result.body.data as Array<Record<string, unknown>>;
    state[path] =
      path === EVENTS ? items.map((event) => event.id) : path === DELIVERIES ? items.map((delivery) => `${delivery.id} ${delivery.status}`) : result.body.data;
  }
  return state;
}

function assertSameState(actual: Record<string, unknown>, expected: Record<string, unknown>, when: string): void {
  for (const path of STATE) assert.equal(actual[path], expected[path], `GET ${path} ${when}`);
}

/** The answer is an error of the server's (5xx) in the envelope, naming no secret. */
function assertRefused(result: HttpResult, what: string, secrets: string[]): void {
  assert.ok(result.status >= 500 && result.status < 600, `${what} answers 5xx: ${result.status} ${result.text}`);
  assert.type(result.body.code, 'string', `${what}: an envelope`);
  assert.type(result.body.timestamp, 'string', `${what}: an envelope`);
  for (const secret of secrets) assert.not.ok(result.text.includes(secret), `${what}: its answer names no secret`);
}

/** The same call each time, as a provider retries it: one delivery id. */
const callWebhook = (daemon: TestDaemon) =>
  call(daemon.url, 'POST', '/api/webhooks/weather', {
    raw: HOOK_BODY,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': 'e1f1b9a0-cc78-11e3-81ab-4c9367dc0958',
      'x-hub-signature-256': signGithub(WEBHOOK_SECRET, HOOK_BODY),
    },
  });

/** Events of the workspace published by the webhook call. */
async function hookEvents(admin: Api): Promise<string[]> {
  const listed = (await admin.get(EVENTS)).body.data as Array<{ id: string; payload: unknown }>;
  return listed.filter((event) => JSON.stringify(event.payload) === HOOK_BODY).map((event) => event.id);
}

const publishBig = (admin: Api) => admin.post('/api/workspaces/acme/events/publish', { eventKey: 'weather.updated', payload: BIG_PAYLOAD });

/** Events of the workspace carrying BIG_PAYLOAD: read one by one, as the listing's ids say nothing of payloads. */
async function bigEvents(admin: Api): Promise<string[]> {
  const listed = (await admin.get(EVENTS)).body.data as Array<{ id: string; payload: unknown }>;
  return listed.filter((event) => JSON.stringify(event.payload) === JSON.stringify(BIG_PAYLOAD)).map((event) => event.id);
}

/** The workspace every case starts from: weather 1.0.0 installed with a subscription to its receiver, radar published and not installed. */
async function prepare(daemon: TestDaemon, receiver: Subscriber): Promise<{ subscriptionId: string; signingSecret: string }> {
  const admin = await daemon.admin();
  await publishExtension(admin, 'weather', '1.0.0');
  await publishExtension(admin, 'weather', '1.1.0');
  await publishExtension(admin, 'radar', '1.0.0');
  await createWorkspace(admin, 'acme');
  await install(admin, 'acme', 'weather', '1.0.0');
  await configureExtension(admin, 'weather', [
    ['units', 'STRING', 'imperial'],
    ['api.key', 'SECRET', SECRET_VALUE],
    ['webhook.scheme', 'STRING', 'github'],
    ['webhook.secret', 'SECRET', WEBHOOK_SECRET],
    ['webhook.workspaceId', 'STRING', 'acme'],
    ['webhook.eventKey', 'STRING', 'weather.updated'],
  ]);
  const { id, signingSecret } = await subscribeExternal(admin, 'acme', 'weather.updated', 'weather', receiver.url);
  return { subscriptionId: id, signingSecret };
}

/**
 * A publish after the refused one, delivered: by then a delivery the refused
 * publish left in the outbox would have been resumed. Returns what the
 * receiver got in all.
 */
async function publishMarker(admin: Api, receiver: Subscriber): Promise<string[]> {
  const marker = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'weather.updated', payload: { marker: true } });
  assert.is(marker.status, 200, marker.text);
  await waitFor('the marker delivered', () => receiver.received.some((delivery) => delivery.json.id === marker.body.meta.eventId));
  return receiver.received.map((delivery) => delivery.json.id as string);
}

/**
 * Stops the daemon and puts `<data-dir>/events`, the event log, on a tmpfs of
 * its own (its files copied over), so that the event log and the outbox can
 * run out of space apart. Returns the unmount.
 */
async function eventLogOnItsOwnDisk(daemon: TestDaemon, size: string): Promise<() => void> {
  await daemon.stop();
  const events = join(daemon.dataDir, 'events');
  const kept = join(await tempDir(), 'events');
  cpSync(events, kept, { recursive: true });
  rmSync(events, { recursive: true });
  mkdirSync(events);
  const unmount = mountSmallDisk(events, size, '0700');
  cpSync(kept, events, { recursive: true });
  return unmount;
}

const overrides: Partial<DaemonConfig> = { dispatch: FAST_DISPATCH };

/**
 * The refused publish of the two file cases: 503 with nothing listed, nothing
 * delivered and nothing resurrected by the next start; then its retry
 * publishes once.
 */
async function assertPublishRefusedThenOnce(
  start: () => Promise<TestDaemon>,
  receiver: Subscriber,
  filler: string,
  refusedOn: string,
): Promise<TestDaemon> {
  let daemon = await start();
  try {
    const admin = await daemon.admin();
    const before = await stateOf(admin);
    fillDisk(filler);
    assertRefused(await publishBig(admin), `a publish when ${refusedOn} is full`, []);
    assertRefused(await callWebhook(daemon), `a webhook call when ${refusedOn} is full`, [WEBHOOK_SECRET]);
    assertSameState(await stateOf(admin), before, `after a publish and a webhook call refused because ${refusedOn} is full`);

    await rm(filler);
    await daemon.stop();
    daemon = await start();
    const restarted = await daemon.admin();
    assertSameState(await stateOf(restarted), before, 'after a restart: the refused publish is not resurrected');
    assert.equal(await bigEvents(restarted), []);
    const received = await publishMarker(restarted, receiver);
    assert.is(received.length, 1, 'only the marker was delivered');

    const retried = await publishBig(restarted);
    assert.is(retried.status, 200, `the retry once space is back: ${retried.text}`);
    await waitFor('the retry delivered', () => receiver.received.some((delivery) => delivery.json.id === retried.body.meta.eventId));
    assert.equal(await bigEvents(restarted), [retried.body.meta.eventId], 'the retry published once');
    const hookRetried = await callWebhook(daemon);
    assert.is(hookRetried.status, 200, `the provider's retry of the webhook call: ${hookRetried.text}`);
    assert.ok(hookRetried.body.meta.eventId, 'published, not taken for a duplicate');
    await waitFor('the webhook\'s event delivered', () => receiver.received.some((delivery) => delivery.json.id === hookRetried.body.meta.eventId));
    await daemon.stop();
    daemon = await start();
    const again = await daemon.admin();
    assert.equal(await bigEvents(again), [retried.body.meta.eventId], 'once, after a restart too');
    assert.equal(await hookEvents(again), [hookRetried.body.meta.eventId], 'the webhook call published once');
    await waitFor('the marker and the two retries delivered, nothing else', async () => receiver.received.length === 3);
    return daemon;
  } catch (error) {
    await daemon.stop();
    throw error;
  }
}

needsSmallDisk(filesOnly(test))('a publish whose event line finds the disk full answers 503 and leaves no delivery behind, not even for the next start; its retry publishes once (files only: fills the event log\'s own disk)', async () => {
  const receiver = await startSubscriber();
  const dataDir = await tempDir();
  let daemon = await startTestDaemon(overrides, dataDir);
  let unmount: (() => void) | null = null;
  try {
    await prepare(daemon, receiver);
    unmount = await eventLogOnItsOwnDisk(daemon, '1m');
    daemon = await assertPublishRefusedThenOnce(() => startTestDaemon(overrides, dataDir), receiver, join(dataDir, 'events', 'filler'), 'the event log\'s disk');
  } finally {
    await daemon.stop();
    unmount?.();
    await receiver.close();
  }
});

needsSmallDisk(filesOnly(test))('a publish whose deliveries find the disk full answers 503 and leaves no event behind, not even for the next start; its retry publishes once (files only: fills the disk of the outbox, not of the event log)', async () => {
  const receiver = await startSubscriber();
  await withSmallDisk('8m', async (dataDir) => {
    let daemon = await startTestDaemon(overrides, dataDir);
    let unmount: (() => void) | null = null;
    try {
      await prepare(daemon, receiver);
      unmount = await eventLogOnItsOwnDisk(daemon, '16m');
      daemon = await assertPublishRefusedThenOnce(() => startTestDaemon(overrides, dataDir), receiver, join(dataDir, 'filler'), 'the outbox\'s disk');
    } finally {
      await daemon.stop();
      unmount?.();
    }
  });
  await receiver.close();
});

interface Write {
  what: string;
  send: (admin: Api, subscriptionId: string) => Promise<HttpResult>;
  /** On PostgreSQL: text of the statement that writes (the connection is lost before it runs) and of the read-back after the commit. */
  writes: string;
  readBack: { text: string; skip?: number };
}

const INSTALLATIONS_READ_BACK = { text: 'FROM installations WHERE $1::text IS NULL OR workspace_id = $1' };
const CONFIG_READ_BACK = { text: 'FROM extension_config WHERE extension_key = $1 ORDER BY position', skip: 1 };

/** Every write of installations, subscriptions and configuration, as a client calls it. */
const WRITES: Write[] = [
  {
    what: 'rename an extension',
    send: (admin) => admin.put('/api/admin/marketplace/extensions/weather', { name: 'Weather Radar' }),
    writes: 'UPDATE extensions SET name',
    // The first is the update's own read of the extension, under its lock.
    readBack: { text: 'WHERE e.extension_key = $1 GROUP BY e.extension_key', skip: 1 },
  },
  {
    what: 'install',
    send: (admin) => admin.post('/api/workspaces/acme/extensions', { extensionKey: 'radar' }),
    writes: 'INSERT INTO installations',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'change version',
    send: (admin) => admin.patch('/api/workspaces/acme/extensions/weather', { version: '1.1.0' }),
    writes: 'UPDATE installations',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'disable',
    send: (admin) => admin.patch('/api/workspaces/acme/extensions/weather', { enabled: false }),
    writes: 'UPDATE installations',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'uninstall',
    send: (admin) => admin.delete('/api/workspaces/acme/extensions/weather'),
    writes: 'DELETE FROM installations',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'subscribe',
    send: (admin) =>
      admin.post('/api/workspaces/acme/subscriptions', {
        eventKey: 'weather.alert',
        extensionKey: 'weather',
        kind: 'EXTERNAL_SERVICE',
        serviceBaseUrl: 'https://receiver.example.test/hooks?token=query-secret',
      }),
    writes: 'INSERT INTO subscriptions',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'disable subscription',
    send: (admin, id) => admin.patch(`/api/workspaces/acme/subscriptions/${id}`, { enabled: false }),
    writes: 'UPDATE subscriptions',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'rotate secret',
    send: (admin, id) => admin.post(`/api/workspaces/acme/subscriptions/${id}/rotate-secret`),
    writes: 'UPDATE subscriptions',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'unsubscribe',
    send: (admin, id) => admin.delete(`/api/workspaces/acme/subscriptions/${id}`),
    writes: 'DELETE FROM subscriptions',
    readBack: INSTALLATIONS_READ_BACK,
  },
  {
    what: 'configure',
    send: (admin) =>
      admin.put('/api/admin/marketplace/extensions/weather/config', {
        fields: [
          { name: 'units', type: 'STRING', value: 'metric' },
          { name: 'api.key', type: 'SECRET', value: 'another-secret-value' },
        ],
      }),
    writes: 'INSERT INTO extension_config',
    readBack: CONFIG_READ_BACK,
  },
  {
    what: 'remove a configuration field',
    send: (admin) => admin.delete('/api/admin/marketplace/extensions/weather/config/units'),
    writes: 'INSERT INTO extension_config',
    readBack: CONFIG_READ_BACK,
  },
];

/** No answer ever shows a signing secret, a configuration secret or a subscriber URL's query. */
const SECRETS = ['whsec_', SECRET_VALUE, WEBHOOK_SECRET, 'another-secret-value', 'query-secret'];

/**
 * The signing secret was not rotated: a delivery carries one signature, made
 * with the secret given at subscription (a rotation would add the new one).
 */
async function assertSignedWithOnly(admin: Api, receiver: Subscriber, signingSecret: string): Promise<void> {
  const published = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'weather.updated', payload: { check: 'signature' } });
  assert.is(published.status, 200, published.text);
  const delivery = await waitFor('the signature check delivered', () => receiver.received.find((received) => received.json.id === published.body.meta.eventId));
  const signatures = String(delivery.headers['webhook-signature']).split(' ');
  assert.is(signatures.length, 1, 'one signature: no rotation took place');
  assert.ok(hasValidSignature(delivery, signingSecret), 'signed with the secret given at subscription');
}

needsSmallDisk(filesOnly(test))('on a full disk every write of installations, subscriptions and configuration answers 503 and changes nothing, then or after a restart (files only: fills the disk of the data directory)', async () => {
  const receiver = await startSubscriber();
  await withSmallDisk('8m', async (dataDir) => {
    let daemon = await startTestDaemon(overrides, dataDir);
    try {
      const { subscriptionId, signingSecret } = await prepare(daemon, receiver);
      const admin = await daemon.admin();
      const before = await stateOf(admin);
      const filler = join(dataDir, 'filler');
      fillDisk(filler);
      for (const write of WRITES) {
        assertRefused(await write.send(admin, subscriptionId), `${write.what} on a full disk`, SECRETS);
        assertSameState(await stateOf(admin), before, `after ${write.what} was refused`);
      }
      await rm(filler);
      daemon = await daemon.restart();
      const restarted = await daemon.admin();
      assertSameState(await stateOf(restarted), before, 'after a restart');
      await assertSignedWithOnly(restarted, receiver, signingSecret);
    } finally {
      await daemon.stop();
    }
  });
  await receiver.close();
});

// PostgreSQL: the daemon reaches the database through a TCP proxy that loses one connection at a chosen statement.

interface Proxied {
  daemon: TestDaemon;
  proxy: TcpProxy;
  receiver: Subscriber;
  subscriptionId: string;
  signingSecret: string;
}

async function proxiedDaemon(): Promise<Proxied> {
  const url = new URL(await freshDatabase());
  const proxy = await startTcpProxy(Number(url.port));
  url.port = String(proxy.port);
  const receiver = await startSubscriber();
  const daemon = await startTestDaemon({ ...overrides, database: { url: url.toString(), schema: 'platform' } });
  return { daemon, proxy, receiver, ...(await prepare(daemon, receiver)) };
}

async function closeProxied({ daemon, proxy, receiver }: Proxied): Promise<void> {
  await daemon.destroy();
  await proxy.close();
  await receiver.close();
}

postgresOnly(test)('a connection lost before a write of the catalog, installations, subscriptions or configuration runs: 503 and nothing changed, then or after a restart (PostgreSQL only: loses a database connection)', async () => {
  const proxied = await proxiedDaemon();
  try {
    const admin = await proxied.daemon.admin();
    const before = await stateOf(admin);
    for (const write of WRITES) {
      const lost = proxied.proxy.cutAt(write.writes, 'before');
      assertRefused(await write.send(admin, proxied.subscriptionId), `${write.what} losing its connection`, SECRETS);
      await lost;
      assertSameState(await stateOf(admin), before, `after ${write.what} lost its connection`);
    }
    proxied.daemon = await proxied.daemon.restart();
    const restarted = await proxied.daemon.admin();
    assertSameState(await stateOf(restarted), before, 'after a restart');
    await assertSignedWithOnly(restarted, proxied.receiver, proxied.signingSecret);
  } finally {
    await closeProxied(proxied);
  }
});

postgresOnly(test)('a connection lost after a write of the catalog, installations, subscriptions or configuration committed (its COMMIT\'s answer lost, or the read-back after it): the write is answered as made, and it was (PostgreSQL only: loses a database connection)', async () => {
  for (const write of WRITES) {
    for (const [moment, trap] of [
      ['answer to COMMIT', { text: 'COMMIT', moment: 'after' as const, skip: 0 }],
      ['read-back', { ...write.readBack, moment: 'before' as const, skip: write.readBack.skip ?? 0 }],
    ] as const) {
      const proxied = await proxiedDaemon();
      try {
        const admin = await proxied.daemon.admin();
        const before = await stateOf(admin);
        const lost = proxied.proxy.cutAt(trap.text, trap.moment, trap.skip);
        const result = await write.send(admin, proxied.subscriptionId);
        await lost;
        assert.ok(result.status >= 200 && result.status < 300, `${write.what} whose ${moment} was lost: ${result.status} ${result.text}`);
        // Made, and shown once read back: a read-back that failed is tried again a second later.
        if (write.what !== 'rotate secret') {
          await waitFor(`${write.what} shown as made`, async () => JSON.stringify(await stateOf(admin)) !== JSON.stringify(before), 5_000);
        }
      } finally {
        await closeProxied(proxied);
      }
    }
  }
});

postgresOnly(test)('a publish or a webhook call losing its connection: before the statement ran and the database stays away, 503 and nothing recorded; after it ran, answered once the database is asked again; a retry publishes once (PostgreSQL only: loses a database connection)', async () => {
  const proxied = await proxiedDaemon();
  try {
    const { proxy, receiver } = proxied;
    const admin = await proxied.daemon.admin();
    const before = await stateOf(admin);

    const lost = proxy.cutAt('publish-events', 'before').then(() => proxy.cut());
    assertRefused(await publishBig(admin), 'a publish losing the database', []);
    await lost;
    proxy.restore();
    await waitFor('the database reachable again', async () => (await proxied.daemon.anon.get('/api/health/ready')).status === 200);
    assertSameState(await stateOf(admin), before, 'after the publish lost the database');

    const hookLost = proxy.cutAt('publish-events', 'before').then(() => proxy.cut());
    assertRefused(await callWebhook(proxied.daemon), 'a webhook call losing the database', [WEBHOOK_SECRET]);
    await hookLost;
    proxy.restore();
    await waitFor('the database reachable again', async () => (await proxied.daemon.anon.get('/api/health/ready')).status === 200);
    assertSameState(await stateOf(admin), before, 'after the webhook call lost the database');
    const hookRetried = await callWebhook(proxied.daemon);
    assert.is(hookRetried.status, 200, `the provider's retry: ${hookRetried.text}`);
    assert.equal(await hookEvents(admin), [hookRetried.body.meta.eventId], 'the webhook call published once');

    const answerLost = proxy.cutAt('publish-events', 'after');
    const published = await publishBig(admin);
    await answerLost;
    assert.is(published.status, 200, `a publish whose answer was lost after it committed: ${published.text}`);
    assert.equal(await bigEvents(admin), [published.body.meta.eventId], 'recorded once');

    const retried = await publishBig(admin);
    assert.is(retried.status, 200, retried.text);
    const answered = [published.body.meta.eventId, retried.body.meta.eventId, hookRetried.body.meta.eventId].sort();
    await waitFor('both delivered', () => answered.every((id) => receiver.deliveredEventIds().has(id)));
    proxied.daemon = await proxied.daemon.restart();
    const restarted = await proxied.daemon.admin();
    assert.equal((await bigEvents(restarted)).sort(), [published.body.meta.eventId, retried.body.meta.eventId].sort(), 'two publishes answered 200, two events');
    assert.equal(await hookEvents(restarted), [hookRetried.body.meta.eventId]);
    await publishMarker(restarted, receiver);
    const deliveries = (await restarted.get(DELIVERIES)).body.data as Array<{ eventId: string }>;
    assert.is(deliveries.length, 4, 'one delivery each, the marker\'s included');
    assert.ok(answered.every((id) => deliveries.some((delivery) => delivery.eventId === id)));
  } finally {
    await closeProxied(proxied);
  }
});

test.run();
