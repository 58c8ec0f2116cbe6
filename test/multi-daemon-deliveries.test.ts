import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keepArtifact } from './helpers/artifacts.js';
import { spawnDaemon, type DaemonProcess } from './helpers/cli.js';
import { ADMIN, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { api, call, tokenOf, type Api } from './helpers/http.js';
import { freshDatabase, restartTestPostgres } from './helpers/postgres.js';
import { startSubscriber, type ReceivedDelivery } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

// PostgreSQL only (npm test runs it on the PostgreSQL pass): several daemons deliver from one
// shared queue. The subscriber counts the attempts it is answering per delivery id (webhook-id):
// two attempts of one delivery in flight at once would mean two daemons held it at once.

const masterKey = randomBytes(32).toString('base64');
const METRICS_TOKEN = 'scrape-token-0123456789abcdef';
const EVENT_KEY = 'crm.deal.closed';

const login = async (url: string): Promise<Api> => api(url, tokenOf(await call(url, 'POST', '/api/auth/login', { json: ADMIN })));

/** Publishes one event; the event id when it was acknowledged (2xx), else the status (0: no answer at all). */
async function publish(client: Api, n: number): Promise<{ eventId: string } | { status: number; code?: string }> {
  try {
    const result = await client.post('/api/workspaces/load/events/publish', { eventKey: EVENT_KEY, payload: { n } });
    if (result.status >= 200 && result.status < 300) return { eventId: result.body.meta.eventId as string };
    return { status: result.status, code: result.body?.code };
  } catch {
    return { status: 0 };
  }
}

async function scrape(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return response.text();
}

/** The value of one sample line (`name{labels} value`), 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(series + ' '));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const attemptsCounted = (text: string) =>
  ['delivered', 'retried', 'dead_lettered'].reduce((sum, outcome) => sum + sample(text, `platform_deliveries_total{outcome="${outcome}"}`), 0);


/** Two daemons on one database, with workspace `load` subscribed to EVENT_KEY at `subscriberUrl` (started one after the other: the first migrates). */
async function twoDaemonsDelivering(options: Parameters<typeof startTestDaemon>[0], subscriberUrl: string): Promise<TestDaemon[]> {
  const daemons: TestDaemon[] = [await startTestDaemon(options)];
  try {
    daemons.push(await startTestDaemon(options));
    const admin = await daemons[0]!.admin();
    await workspaceWith(admin, 'load', 'crm');
    await subscribeExternal(admin, 'load', EVENT_KEY, 'crm', subscriberUrl);
    return daemons;
  } catch (error) {
    for (const daemon of daemons) await daemon.destroy();
    throw error;
  }
}

/** The local ports of a process's TCP sockets (Linux: its descriptors' inodes found in /proc/net/tcp and tcp6). */
function tcpPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = (() => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    })();
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const columns = row.trim().split(/\s+/);
      if (inodes.has(columns[9]!)) ports.add(parseInt(columns[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/**
 * Delivery ids with two attempts in flight at once while both senders were alive. An attempt of a
 * SIGKILLed daemon ends at the kill: the subscriber may see its connection close later (the kernel
 * closed it 1.3 s after the kill once here), while the other daemons rightly resume it after the lease.
 */
function overlapping(received: readonly ReceivedDelivery[], killedPorts: ReadonlySet<number>, killedAt: number): string[] {
  const byDelivery = new Map<string, Array<[number, number]>>();
  for (const request of received) {
    const killedSender = request.remotePort !== undefined && killedPorts.has(request.remotePort);
    const end = Math.min(request.closedAt ?? Number.POSITIVE_INFINITY, killedSender ? killedAt : Number.POSITIVE_INFINITY);
    const id = String(request.headers['webhook-id']);
    byDelivery.set(id, [...(byDelivery.get(id) ?? []), [request.arrivedAt, end]]);
  }
  return [...byDelivery]
    .filter(([, spans]) => spans.some(([start, end], i) => spans.some(([otherStart, otherEnd], j) => i !== j && start < otherEnd && otherStart < end)))
    .map(([id]) => id);
}

test('three daemons, one SIGKILLed mid-load with attempts in flight: every acknowledged event is delivered, the killed one\'s deliveries resumed by the others, never two attempts of one delivery at once', async () => {
  const url = await freshDatabase();
  // Every third attempt outlasts two leases: without renewal another daemon would take it meanwhile.
  // The first attempt of every other delivery fails: its retry goes to the shared queue, which all daemons claim from.
  const tried = new Set<string>();
  const slow = new WeakSet<ReceivedDelivery>();
  const firstAttempts = new WeakSet<ReceivedDelivery>();
  const subscriber = await startSubscriber((request, index) => {
    const first = !tried.has(String(request.headers['webhook-id']));
    tried.add(String(request.headers['webhook-id']));
    if (first) firstAttempts.add(request);
    if (first && tried.size % 2 === 1) return { status: 500 };
    if (index % 3 !== 0) return { delayMs: 50 };
    slow.add(request);
    return { delayMs: 2_500 };
  });
  const env = {
    PLATFORM_DATABASE_URL: url,
    PLATFORM_MASTER_KEY: masterKey,
    PLATFORM_DELIVERY_LEASE: '1',
    PLATFORM_RETRY_SCHEDULE: '50,100,200',
    PLATFORM_ADMIN_EMAIL: ADMIN.email,
    PLATFORM_ADMIN_PASSWORD: ADMIN.password,
  };
  const daemons: DaemonProcess[] = [];
  try {
    // The first creates the administrator; the others start on a database that has one.
    daemons.push(await spawnDaemon(await tempDir(), env));
    daemons.push(...(await Promise.all([spawnDaemon(await tempDir(), env), spawnDaemon(await tempDir(), env)])));
    const clients = await Promise.all(daemons.map((daemon) => login(daemon.url)));
    await workspaceWith(clients[0]!, 'load', 'crm');
    await subscribeExternal(clients[0]!, 'load', EVENT_KEY, 'crm', subscriber.url);

    const victim = 2;
    let killed = false;
    let killedAt = 0;
    let victimPorts = new Set<number>();
    const acknowledged = new Map<string, number>();
    const total = 90;
    let next = 0;
    const publisher = async () => {
      while (next < total) {
        const n = next++;
        // Round robin over the daemons still running.
        const alive = killed ? [0, 1] : [0, 1, 2];
        const to = alive[n % alive.length]!;
        const answer = await publish(clients[to]!, n);
        if ('eventId' in answer) acknowledged.set(answer.eventId, to);
      }
    };
    const killer = async () => {
      // A first attempt of an event published on the victim is the victim's: it holds what it publishes.
      // (A retry may be any daemon's: retries go to the shared queue.)
      await waitFor('a slow attempt of the victim in flight', () => {
        const victims = new Set([...acknowledged].filter(([, by]) => by === victim).map(([eventId]) => eventId));
        return (
          victims.size >= 5 &&
          subscriber.received.some((request) => slow.has(request) && firstAttempts.has(request) && request.status === undefined && victims.has(request.json.id))
        );
      });
      victimPorts = tcpPortsOf(daemons[victim]!.child.pid!);
      daemons[victim]!.child.kill('SIGKILL');
      killedAt = performance.now();
      killed = true;
    };
    await Promise.all([publisher(), publisher(), publisher(), publisher(), killer()]);
    assert.is(await daemons[victim]!.exited, 'SIGKILL');

    const cutOff = await waitFor('the victim\'s attempts cut off', () => {
      const abandoned = subscriber.received.filter((request) => request.abandoned);
      return abandoned.length > 0 && abandoned;
    });
    const missing = () => [...acknowledged.keys()].filter((eventId) => !subscriber.deliveredEventIds().has(eventId));
    await waitFor(`every acknowledged event delivered (${missing().length} missing)`, () => missing().length === 0, 30_000);
    const answered = new Set(subscriber.received.filter((request) => request.status !== undefined && request.status < 300).map((request) => request.headers['webhook-id']));
    for (const request of cutOff) assert.ok(answered.has(request.headers['webhook-id']), `the cut-off attempt of ${request.headers['webhook-id']} was resumed`);
    const doubled = overlapping(subscriber.received, victimPorts, killedAt);
    if (doubled.length > 0) {
      // Kept for the next look: when each attempt of those deliveries arrived and ended here, from which port, and what each daemon said.
      const attempts = subscriber.received
        .filter((request) => doubled.includes(String(request.headers['webhook-id'])))
        .map((request) => `${request.headers['webhook-id']}: from port ${request.remotePort}${victimPorts.has(request.remotePort!) ? ' (the victim)' : ''}, arrived ${request.arrivedAt.toFixed(1)} ms, ended ${request.closedAt?.toFixed(1) ?? '-'} ms, status ${request.status ?? '-'}${request.abandoned ? ', abandoned' : ''}`);
      const kept = keepArtifact('multi-daemon-overlap', [...attempts, `daemon ${victim} SIGKILLed at ${killedAt.toFixed(1)} ms`, '', ...daemons.map((daemon, index) => `--- daemon ${index}\n${daemon.output()}`)].join('\n'));
      assert.unreachable(`deliveries had two attempts in flight at once: ${doubled.join(', ')} (timeline and the daemons' logs: ${kept})`);
    }
    for (const daemon of daemons.slice(0, 2)) {
      assert.not.match(daemon.output(), 'could not be renewed', 'attempts longer than the lease kept it: the daemons renewed it meanwhile');
    }

    // Also what the victim took and was answered for but had not recorded: attempted again, at least once.
    await waitFor('nothing left pending', async () => (await clients[0]!.get('/api/workspaces/load/deliveries?status=PENDING')).body.data.length === 0, 30_000);
  } finally {
    for (const daemon of daemons) daemon.child.kill('SIGKILL');
    await Promise.all(daemons.map((daemon) => daemon.exited));
    await subscriber.close();
  }
});

test('a database restart mid-load: every acknowledged publish is delivered, a publish answered 503 left nothing half-done, and the daemons recover by themselves', async () => {
  const url = await freshDatabase();
  // Some attempts are in flight across the restart, which outlasts the lease: without letting go of
  // them, the daemon would still be attempting what another one claims when the database is back.
  // Failed first attempts keep the shared queue busy, so that the daemons claim from it all along.
  const tried = new Set<string>();
  const subscriber = await startSubscriber((request, index) => {
    const first = !tried.has(String(request.headers['webhook-id']));
    tried.add(String(request.headers['webhook-id']));
    if (first && tried.size % 3 === 1) return { status: 500 };
    return { delayMs: index % 4 === 0 ? 4_000 : 20 };
  });
  const onDatabase = { database: { url, schema: 'platform' }, masterKey, deliveryLeaseMs: 1_000, dispatch: { ...FAST_DISPATCH, deliveryTimeoutMs: 10_000 } };
  const daemons = await twoDaemonsDelivering(onDatabase, subscriber.url);
  try {
    const clients = await Promise.all(daemons.map((daemon) => daemon.admin()));

    const acknowledged = new Set<string>();
    const refused: Array<{ status: number; code?: string }> = [];
    let restarted = false;
    let n = 0;
    const publisher = async () => {
      // Through the restart, and ten publishes more once it is done.
      for (let afterRestart = 0; afterRestart < 10; ) {
        const answer = await publish(clients[n % clients.length]!, n++);
        if ('eventId' in answer) acknowledged.add(answer.eventId);
        else refused.push(answer);
        if (restarted) afterRestart += 1;
      }
    };
    const restarter = async () => {
      await waitFor('some events published', () => acknowledged.size >= 20);
      await restartTestPostgres(async () => {
        await waitFor('a publish refused', () => refused.length > 0);
        for (const daemon of daemons) {
          await waitFor('the daemon not ready', async () => (await daemon.anon.get('/api/health/ready')).status === 503);
        }
      });
      restarted = true;
    };
    await Promise.all([publisher(), publisher(), publisher(), restarter()]);

    assert.ok(refused.length > 0, 'some publishes were refused while the database was down');
    for (const answer of refused) assert.equal(answer, { status: 503, code: 'UNAVAILABLE' });
    for (const daemon of daemons) {
      await waitFor('readiness again', async () => (await daemon.anon.get('/api/health/ready')).status === 200);
    }
    const after = await Promise.all(clients.map((client, index) => publish(client, 10_000 + index)));
    for (const answer of after) {
      assert.ok('eventId' in answer, 'each daemon takes publishes again');
      acknowledged.add(answer.eventId);
    }
    const missing = () => [...acknowledged].filter((eventId) => !subscriber.deliveredEventIds().has(eventId));
    await waitFor(`every acknowledged event delivered (${missing().length} missing)`, () => missing().length === 0, 30_000);
    assert.equal([...subscriber.concurrency.overlapping], [], 'no delivery had two attempts in flight at once');

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT e.id FROM platform.events e WHERE NOT EXISTS (SELECT 1 FROM platform.deliveries d WHERE d.event_id = e.id)`,
      );
      assert.equal(rows, [], 'every stored event has its delivery');
    } finally {
      await client.end();
    }
  } finally {
    for (const daemon of daemons) await daemon.destroy();
    await subscriber.close();
  }
});

test('per daemon: the subscriber\'s share of the delivery slots holds on each, /metrics counts its own attempts, and the pending gauge shows the shared queue', async () => {
  const url = await freshDatabase();
  // A subscriber alone may take all but a quarter of a daemon's slots: 3 of 4 here.
  const concurrency = 4;
  const perDaemon = concurrency - Math.ceil(concurrency / 4);
  const subscriber = await startSubscriber(() => ({ delayMs: 100 }));
  const onDatabase = {
    database: { url, schema: 'platform' },
    masterKey,
    metricsToken: METRICS_TOKEN,
    dispatch: { ...FAST_DISPATCH, deliveryConcurrency: concurrency },
  };
  const daemons = await twoDaemonsDelivering(onDatabase, subscriber.url);
  try {
    const clients = await Promise.all(daemons.map((daemon) => daemon.admin()));

    const published = await Promise.all(Array.from({ length: 40 }, (_, n) => publish(clients[n % 2]!, n)));
    const eventIds = published.flatMap((answer) => ('eventId' in answer ? [answer.eventId] : []));
    assert.is(eventIds.length, published.length, 'every publish acknowledged');
    await waitFor('every event delivered', () => eventIds.every((eventId) => subscriber.deliveredEventIds().has(eventId)));
    assert.ok(subscriber.concurrency.most <= 2 * perDaemon, `at most ${2 * perDaemon} attempts at once (saw ${subscriber.concurrency.most})`);

    const counted = async () => Promise.all(daemons.map(async (daemon) => attemptsCounted(await scrape(daemon.url))));
    const own = await waitFor('the attempts counted by the daemons to add up to those received', async () => {
      const each = await counted();
      return each[0]! + each[1]! === subscriber.received.length && each;
    });
    for (const count of own) assert.ok(count > 0, 'each daemon counts the attempts it made');

    // In flight on one daemon only, pending for both: the queue is the database's.
    subscriber.answer(() => ({ hang: true }));
    const hanging = subscriber.received.length + 3;
    for (let n = 0; n < 3; n += 1) assert.ok('eventId' in (await publish(clients[0]!, 100 + n)));
    await subscriber.waitForCount(hanging);
    for (const daemon of daemons) {
      await waitFor('the shared queue in the pending gauge', async () => sample(await scrape(daemon.url), 'platform_deliveries_pending') === 3);
    }
  } finally {
    for (const daemon of daemons) await daemon.destroy();
    await subscriber.close();
  }
});

test.run();
