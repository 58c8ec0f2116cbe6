import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, resolveConfig, type DaemonConfig } from '../src/daemon/config.js';
import { signGithub } from '../src/handlers/webhooks/sign.js';
import { startTestDaemon, ADMIN, type TestDaemon } from './helpers/daemon.js';
import { configureExtension, createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import { call, type Api } from './helpers/http.js';
import { onDatabaseOf, TEST_BACKEND } from './helpers/postgres.js';
import { subscriberPool, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

/**
 * What hours of a daemon's life bring, in seconds: every scheduled job runs
 * each second (through the real interval settings) on an empty daemon, an
 * idle one and a busy one, and a data directory (or database) lives through
 * retention, segment rotation and restarts.
 */

const JOBS = ['prune-revoked-tokens', 'event-retention', 'prune-login-throttle', 'prune-webhook-replays', 'prune-idempotency-keys'] as const;
const EVENT_KEY = 'crm.deal.closed';

/** The configuration `platform serve` makes of these environment variables. */
const fromEnv = (env: Record<string, string>) => resolveConfig({}, env);
const EVERY_SECOND = {
  PLATFORM_EVENT_RETENTION_INTERVAL: '1',
  PLATFORM_TOKEN_PRUNE_INTERVAL: '1',
  PLATFORM_LOGIN_THROTTLE_PRUNE_INTERVAL: '1',
  PLATFORM_WEBHOOK_REPLAY_PRUNE_INTERVAL: '1',
  PLATFORM_IDEMPOTENCY_PRUNE_INTERVAL: '1',
};

function lifetimeConfig(env: Record<string, string> = {}, more: Partial<DaemonConfig> = {}): Partial<DaemonConfig> {
  const config = fromEnv({ ...EVERY_SECOND, ...env });
  return { jobs: config.jobs, retention: config.retention, dispatch: FAST_DISPATCH, ...more };
}

const subscribers = subscriberPool();
const daemons = new Set<TestDaemon>();
async function start(config: Partial<DaemonConfig>, dataDir?: string): Promise<TestDaemon> {
  const t = await startTestDaemon(config, dataDir);
  daemons.add(t);
  return t;
}
test.after.each(async () => {
  for (const t of daemons) await t.destroy();
  daemons.clear();
  await subscribers.closeAll();
});

/** Runs of each job by outcome, as /metrics counts them. */
async function jobRuns(t: TestDaemon, admin: Api & { token: string }): Promise<Record<string, Record<string, number>>> {
  // Prometheus text, not an envelope.
  const metrics = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } });
  assert.is(metrics.status, 200);
  const runs: Record<string, Record<string, number>> = {};
  for (const [, job, outcome, count] of (await metrics.text()).matchAll(/^platform_job_runs_total\{job="([^"]+)",outcome="([^"]+)"\} (\d+)$/gm)) {
    (runs[job!] ??= {})[outcome!] = Number(count);
  }
  return runs;
}

/** Waits until every job has succeeded `times` more times than it had when called. */
async function afterRuns(t: TestDaemon, admin: Api & { token: string }, times: number): Promise<void> {
  const before = await jobRuns(t, admin);
  await waitFor(
    `${times} more runs of every job`,
    async () => {
      const now = await jobRuns(t, admin);
      return JOBS.every((job) => (now[job]?.succeeded ?? 0) >= (before[job]?.succeeded ?? 0) + times);
    },
    (times + 5) * 1000,
  );
}

async function assertNoJobFailed(t: TestDaemon, admin: Api & { token: string }): Promise<void> {
  const runs = await jobRuns(t, admin);
  for (const job of JOBS) assert.is(runs[job]?.failed ?? 0, 0, `${job} failed: ${t.logs.filter((line) => line.includes('failed')).join('\n')}`);
  assert.equal(t.logs.filter((line) => /job \S+ failed/.test(line)), []);
}

/** An extension `crm` installed in the workspace, with an external subscriber to crm.deal.closed. */
async function subscribed(admin: Api, workspace: string, subscriber: Subscriber): Promise<void> {
  if ((await admin.get('/api/marketplace/extensions/crm')).status === 404) await publishExtension(admin, 'crm');
  await createWorkspace(admin, workspace);
  await install(admin, workspace, 'crm');
  await subscribeExternal(admin, workspace, EVENT_KEY, 'crm', subscriber.url);
}

async function publish(admin: Api, workspace: string, n: number): Promise<string> {
  const published = await admin.post(`/api/workspaces/${workspace}/events/publish`, { eventKey: EVENT_KEY, payload: { n } });
  assert.is(published.status, 200, published.text);
  return published.body.meta.eventId as string;
}

async function listedIds(admin: Api, workspace: string): Promise<string[]> {
  const listed = await admin.get(`/api/workspaces/${workspace}/events?limit=1000`);
  assert.is(listed.status, 200, listed.text);
  return listed.body.data.map((event: { id: string }) => event.id);
}

/** A fresh login, a publish that lists first and reaches the subscriber. */
async function stillServes(t: TestDaemon, workspace: string, subscriber: Subscriber): Promise<void> {
  const admin = await t.as(ADMIN.email, ADMIN.password);
  const eventId = await publish(admin, workspace, -1);
  assert.is((await listedIds(admin, workspace))[0], eventId);
  await waitFor(`delivery of ${eventId}`, () => subscriber.deliveredEventIds().has(eventId));
}

const newestFirst = (ids: string[]) => [...ids].reverse();

test('interval settings are whole seconds, at least 1; every job has one', () => {
  assert.equal(fromEnv({}).jobs, { eventRetentionMs: 600_000, tokenPruneMs: 600_000, loginThrottlePruneMs: 300_000, webhookReplayPruneMs: 600_000, idempotencyPruneMs: 600_000 });
  assert.equal(fromEnv(EVERY_SECOND).jobs, { eventRetentionMs: 1000, tokenPruneMs: 1000, loginThrottlePruneMs: 1000, webhookReplayPruneMs: 1000, idempotencyPruneMs: 1000 });
  for (const bad of ['0', '1.5', 'soon', '604801']) {
    assert.throws(() => fromEnv({ PLATFORM_EVENT_RETENTION_INTERVAL: bad }), (error: unknown) => error instanceof ConfigError && error.message.includes('PLATFORM_EVENT_RETENTION_INTERVAL'));
  }
});

test('an empty daemon runs every job each second; then it logs in, publishes, lists and delivers', async () => {
  const t = await start(lifetimeConfig());
  const admin = await t.admin();
  // Retention on an empty event log among them: it used to remove the segment every publish then needed.
  await afterRuns(t, admin, 3);
  const subscriber = await subscribers.start();
  await subscribed(admin, 'acme', subscriber);
  await stillServes(t, 'acme', subscriber);
  const again = await publish(admin, 'acme', 2);
  assert.equal((await listedIds(admin, 'acme')).length, 2, 'each publish recorded once');
  await waitFor('the second delivery', () => subscriber.deliveredEventIds().has(again));
  await assertNoJobFailed(t, admin);
});

test('an idle daemon: the jobs remove what is past retention, keep what is not, and everything works after', async () => {
  const t = await start(lifetimeConfig({ PLATFORM_EVENT_RETENTION_COUNT: '5' }, { eventSegmentEvents: 4 }));
  const admin = await t.admin();
  const subscriber = await subscribers.start();
  await subscribed(admin, 'acme', subscriber);
  const published: string[] = [];
  for (let n = 0; n < 12; n += 1) published.push(await publish(admin, 'acme', n));
  await waitFor('every delivery', () => published.every((id) => subscriber.deliveredEventIds().has(id)));

  // A session logged out (revoked until it expires), a failed login, a webhook delivery id seen.
  const loggedOut = await t.as(ADMIN.email, ADMIN.password);
  assert.is((await loggedOut.post('/api/auth/logout', {})).status, 200);
  assert.is((await call(t.url, 'POST', '/api/auth/login', { json: { email: ADMIN.email, password: 'wrong-password' } })).status, 401);
  await publishExtension(admin, 'gh');
  await createWorkspace(admin, 'hooks');
  await configureExtension(admin, 'gh', [['webhook.scheme', 'STRING', 'github'], ['webhook.secret', 'SECRET', 'gh-secret'], ['webhook.workspaceId', 'STRING', 'hooks']]);
  const hook = () => {
    const body = '{"zen":"Keep it logically awesome.","hook_id":1}';
    return call(t.url, 'POST', '/api/webhooks/gh', {
      raw: body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-github-delivery': 'delivery-1', 'x-hub-signature-256': signGithub('gh-secret', body) },
    });
  };
  assert.ok((await hook()).body.meta.eventId);

  await afterRuns(t, admin, 3);

  const kept = published.slice(-5);
  assert.equal(await listedIds(admin, 'acme'), newestFirst(kept), 'the newest 5 are kept (PLATFORM_EVENT_RETENTION_COUNT)');
  assert.is((await admin.get(`/api/workspaces/acme/events/${published[0]}`)).status, 404);
  const records = (await admin.get('/api/workspaces/acme/deliveries?limit=100')).body.data as Array<{ eventId: string }>;
  assert.equal(new Set(records.map((record) => record.eventId)), new Set(kept), 'the delivery records of removed events are gone with them');
  assert.is((await loggedOut.get('/api/auth/me')).status, 401, 'a revocation is kept until its token expires');
  assert.equal((await hook()).body.meta, { duplicate: true }, 'a webhook id is remembered for its 24 hours');
  await stillServes(t, 'acme', subscriber);
  await assertNoJobFailed(t, admin);
});

test('a busy daemon: publishes and deliveries go on while every job runs; each acknowledged event is delivered, retention keeps the newest', async () => {
  const t = await start(lifetimeConfig({ PLATFORM_EVENT_RETENTION_COUNT: '20' }, { eventSegmentEvents: 8 }));
  const admin = await t.admin();
  // Every fifth delivery fails its first attempt and is retried.
  const tried = new Set<string>();
  const subscriber = await subscribers.start((request) => {
    const deliveryId = String(request.headers['webhook-id']);
    const first = !tried.has(deliveryId);
    tried.add(deliveryId);
    return first && tried.size % 5 === 0 ? { status: 503 } : { delayMs: 5 };
  });
  await subscribed(admin, 'busy', subscriber);
  const published: string[] = [];
  let busy = true;
  const publishing = (async () => {
    for (let n = 0; busy; n += 1) {
      published.push(await publish(admin, 'busy', n));
      // Logins and listings go on too.
      if (n % 10 === 0) await t.as(ADMIN.email, ADMIN.password);
      if (n % 7 === 0) await listedIds(admin, 'busy');
    }
  })();
  try {
    await afterRuns(t, admin, 3);
  } finally {
    busy = false;
    await publishing;
  }
  assert.ok(published.length > 20, `published ${published.length}`);
  await waitFor('every acknowledged event delivered', () => published.every((id) => subscriber.deliveredEventIds().has(id)), 20_000);
  await afterRuns(t, admin, 1);
  assert.equal(await listedIds(admin, 'busy'), newestFirst(published.slice(-20)));
  await stillServes(t, 'busy', subscriber);
  await assertNoJobFailed(t, admin);
});

/** Revocations and failed logins as storage holds them: the revocations file on files; rows on PostgreSQL (failed logins are kept in memory on files: null). */
async function stored(t: TestDaemon): Promise<{ revocations: number; failedLogins: number | null }> {
  if (TEST_BACKEND === 'files') {
    const text = await readFile(join(t.dataDir, 'revocations.log'), 'utf8').catch(() => '');
    return { revocations: text.split('\n').filter(Boolean).length, failedLogins: null };
  }
  return onDatabaseOf(t.dataDir, async (client) => {
    const count = async (table: string) => Number((await client.query(`SELECT count(*) AS n FROM platform.${table}`)).rows[0].n);
    return { revocations: await count('revoked_tokens'), failedLogins: await count('login_attempts') };
  });
}

test('the pruning jobs remove revocations of expired sessions and failed logins past the window from storage', async () => {
  const t = await start(lifetimeConfig({}, { tokenTtlSeconds: 2, loginThrottle: { maxFailures: 5, windowSeconds: 1 } }));
  const session = await t.as(ADMIN.email, ADMIN.password);
  assert.is((await session.post('/api/auth/logout', {})).status, 200);
  for (let i = 0; i < 2; i += 1) {
    assert.is((await call(t.url, 'POST', '/api/auth/login', { json: { email: ADMIN.email, password: 'wrong-password' } })).status, 401);
  }
  const before = await stored(t);
  assert.is(before.revocations, 1);
  if (before.failedLogins !== null) assert.is(before.failedLogins, 2);
  await waitFor('the revocation and the failed logins to be pruned', async () => {
    const now = await stored(t);
    return now.revocations === 0 && (now.failedLogins ?? 0) === 0;
  });
  // Sessions live 2 s here: a fresh one for each look.
  const admin = await t.as(ADMIN.email, ADMIN.password);
  await assertNoJobFailed(t, admin);
});

test('a data directory lives through retention, segment rotation and restarts: nothing acknowledged and unexpired is lost', async () => {
  // Events expire after 10 s here (PLATFORM_EVENT_RETENTION_DAYS counts whole days); segments hold 4 events.
  const config = lifetimeConfig({ PLATFORM_EVENT_RETENTION_COUNT: '10' }, { eventSegmentEvents: 4 });
  config.retention = { ...config.retention!, maxAgeMs: 10_000 };
  let t = await start(config);
  const dataDir = t.dataDir;
  const restart = async () => {
    daemons.delete(t);
    t = await t.restart();
    daemons.add(t);
  };
  const subscriber = await subscribers.start();
  await subscribed(await t.admin(), 'keep', subscriber);
  await subscribed(await t.admin(), 'churn', subscriber);
  // Before: events that will expire by age, in both workspaces, through rotations and restarts.
  const expiring: string[] = [];
  for (let round = 0; round < 2; round += 1) {
    for (let n = 0; n < 2; n += 1) expiring.push(await publish(await t.admin(), 'keep', n));
    for (let n = 0; n < 7; n += 1) expiring.push(await publish(await t.admin(), 'churn', n));
    await restart();
  }
  // Retention removes them from storage, not only from listings. Left: on files at most the 4 of the segment being written, which retention leaves alone.
  await waitFor('the expired events to leave storage', async () => (await t.daemon.services.events.storedEvents()) <= 4, 20_000);
  for (const id of expiring.slice(0, 2)) assert.is((await (await t.admin()).get(`/api/workspaces/keep/events/${id}`)).status, 404);

  // After: events that stay, beyond the count in churn, again through rotations and restarts.
  const young: string[] = [];
  const churn: string[] = [];
  for (let round = 0; round < 2; round += 1) {
    for (let n = 0; n < 3; n += 1) young.push(await publish(await t.admin(), 'keep', n));
    for (let n = 0; n < 7; n += 1) churn.push(await publish(await t.admin(), 'churn', n));
    await restart();
  }
  assert.is(t.dataDir, dataDir);
  if (TEST_BACKEND === 'files') {
    const segments = (await readdir(join(dataDir, 'events'))).filter((name) => name.startsWith('segment-')).sort();
    assert.ok(segments.length >= 2 && segments[0] !== 'segment-000001.log', `rotated, and expired segments deleted: ${segments.join()}`);
  }
  const admin = await t.admin();
  await afterRuns(t, admin, 1);
  assert.equal(await listedIds(admin, 'keep'), newestFirst(young), 'every unexpired event of keep');
  assert.equal(await listedIds(admin, 'churn'), newestFirst(churn.slice(-10)), 'the newest 10 of churn');
  await waitFor('every acknowledged event delivered', () => [...expiring, ...young, ...churn].every((id) => subscriber.deliveredEventIds().has(id)));
  await stillServes(t, 'keep', subscriber);
  await assertNoJobFailed(t, admin);
});

test.run();
