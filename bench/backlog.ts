/**
 * 16: a backlog of pending deliveries (every subscriber down), run last in a
 * full bench and alone with `--only backlog`; beside BullMQ on Redis doing
 * the same work (bench/bullmq-peer.mjs). BENCH_BACKLOG_EVENTS sets the number
 * of events (default 1,000,000; 100,000 with --quick).
 *
 *  - 16h first: scenario 4 (publish + deliver to 1 subscriber, 50
 *    connections) against BullMQ (50 producers adding jobs, a worker POSTing
 *    them), in alternated rounds; our rate is also 16e's reference.
 *  - 16f, 16g: BullMQ's backlog: the same number of 1 KB jobs added with no
 *    worker (Redis `used_memory` over its empty figure), then a worker drains
 *    them.
 *  - 16a-16e, ours: an empty daemon's RSS at rest (30 s without requests, see
 *    atRest); the same events published
 *    to a subscription whose subscriber answers 503 with a Retry-After that
 *    names one instant for all of them, the daemon's RSS at rest; a restart
 *    on that data (spawn to the first 200 of /api/health/ready) and its RSS at
 *    rest; then the subscriber answers 200 and the retries all fall due at that
 *    instant: the drain rate, and each event delivered exactly once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchLogFile } from './log-files.js';
import { startPeerProcess, type PeerProcess } from './peer-process.js';
import { subscribe, type BenchKit, type Load, type Subscriber } from './kit.js';

export const REDIS_SERVER = '/usr/bin/redis-server';
const PEER = fileURLToPath(new URL('bullmq-peer.mjs', import.meta.url));
const PAYLOAD_BYTES = 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------- Redis and the BullMQ peer ----------

export interface Redis {
  port: number;
  process: ChildProcess;
  /** INFO memory's used_memory, in bytes. */
  usedMemory(): Promise<number>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** One RESP command over a fresh connection; the bulk reply as text. */
function redisCommand(port: number, ...words: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`*${words.length}\r\n${words.map((word) => `$${Buffer.byteLength(word)}\r\n${word}\r\n`).join('')}`));
    let reply = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      reply = Buffer.concat([reply, chunk]);
      const text = reply.toString('utf8');
      const header = /^\$(\d+)\r\n/.exec(text);
      if (text.startsWith('+') || text.startsWith('-') || text.startsWith(':')) {
        if (text.includes('\r\n')) socket.end(() => resolve(text.trim()));
      } else if (header && reply.length >= header[0].length + Number(header[1]) + 2) {
        socket.end(() => resolve(reply.subarray(header[0].length, header[0].length + Number(header[1])).toString('utf8')));
      }
    });
    socket.on('error', reject);
  });
}

/**
 * redis-server on a free port with a private folder: an append-only file
 * synced every second (`--appendonly yes --appendfsync everysec`), no
 * snapshots. It is the queue the peer stands on, as the data directory is
 * the daemon's: on the daemon's core, the one the peer uses too (with both
 * cores it would have the load's and the subscriber's core besides). Null
 * where redis-server is not installed.
 */
export async function startRedis(kit: BenchKit): Promise<Redis | null> {
  if (!existsSync(REDIS_SERVER)) return null;
  const dir = mkdtempSync(join(tmpdir(), 'platform-bench-redis-'));
  const port = await freePort();
  const command = [REDIS_SERVER, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--daemonize', 'no', '--logfile', ''];
  const argv = kit.PINNED ? ['taskset', '-c', '0', ...command] : command;
  const logFile = benchLogFile('redis.log');
  const out = openSync(logFile, 'w');
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', out, out] });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await redisCommand(port, 'PING')) === '+PONG') break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start:\n${readFileSync(logFile, 'utf8')}`);
    await sleep(20);
  }
  return {
    port,
    process: child,
    async usedMemory() {
      return Number(/^used_memory:(\d+)/m.exec(await redisCommand(port, 'INFO', 'memory'))?.[1]);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** bench/bullmq-peer.mjs's commands (see there). */
type BullPeerCommand =
  | { type: 'work' }
  | { type: 'produce'; seconds: number; producers: number }
  | { type: 'fill'; count: number; payloadBytes: number }
  | { type: 'stop' };

type BullPeer = PeerProcess<BullPeerCommand, Load>;

/** The peer on the daemon's core, like a daemon, delivering to `subscriberUrl`. */
function startBullPeer(kit: BenchKit, redis: Redis, subscriberUrl: string): Promise<BullPeer> {
  return startPeerProcess('BullMQ peer', [process.execPath, PEER], { PEER_REDIS_PORT: String(redis.port), PEER_SUBSCRIBER_URL: subscriberUrl }, kit.PINNED);
}

/** Why the BullMQ side cannot run here, or null when it can. */
export function bullmqMissing(): string | null {
  if (!existsSync(REDIS_SERVER)) return `${REDIS_SERVER} is not installed (Debian package redis-server)`;
  // Resolved, not imported: the bench's own process has no use for them, and without them this file still typechecks.
  for (const name of ['bullmq', 'ioredis']) {
    try {
      import.meta.resolve(name);
    } catch {
      return `the ${name} package is not installed (a devDependency: npm install)`;
    }
  }
  return null;
}

// ---------- counting subscribers ----------

/**
 * The backlog's subscriber on a fixed port: down (503 with a Retry-After
 * naming `resumeAt`, set at the first failure) until `up()`, then 200. Counts
 * each delivery id (webhook-id) and event id it acknowledged, so that
 * duplicates and missing events show.
 */
interface BacklogSubscriber {
  url: string;
  failures: number;
  /** Failures after the first of each delivery: retries that came while it was still down. */
  earlyRetries: number;
  resumeAt: number;
  deliveries: Map<string, number>;
  eventIds: Set<string>;
  duplicates: number;
  lastAt: number;
  up(): void;
  close(): Promise<void>;
}

async function startBacklogSubscriber(resumeAfterMs: number): Promise<BacklogSubscriber> {
  let down = true;
  const failed = new Set<string>();
  const subscriber: BacklogSubscriber = {
    url: '',
    failures: 0,
    earlyRetries: 0,
    resumeAt: 0,
    deliveries: new Map(),
    eventIds: new Set(),
    duplicates: 0,
    lastAt: 0,
    up: () => (down = false),
    close: async () => {
      server.close();
      server.closeAllConnections();
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const deliveryId = String(req.headers['webhook-id']);
      if (down) {
        const now = Date.now();
        // Whole seconds, as an HTTP date names them: the retries fall due at `resumeAt` exactly.
        const instant = (afterMs: number) => Math.ceil((now + afterMs) / 1000) * 1000;
        if (subscriber.failures === 0) subscriber.resumeAt = instant(resumeAfterMs);
        // A retry that came before the subscriber was back (the bench ran past the instant): one more instant, later.
        if (subscriber.resumeAt - now < 1_000) subscriber.resumeAt = instant(60_000);
        subscriber.failures += 1;
        if (failed.has(deliveryId)) subscriber.earlyRetries += 1;
        else failed.add(deliveryId);
        res.writeHead(503, { 'retry-after': new Date(subscriber.resumeAt).toUTCString() });
        res.end();
        return;
      }
      const seen = subscriber.deliveries.get(deliveryId) ?? 0;
      if (seen > 0) subscriber.duplicates += 1;
      subscriber.deliveries.set(deliveryId, seen + 1);
      const eventId = /"id":"([^"]+)"/.exec(Buffer.concat(chunks).toString('latin1'))?.[1];
      if (eventId) subscriber.eventIds.add(eventId);
      subscriber.lastAt = performance.now();
      res.statusCode = 204;
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  subscriber.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return subscriber;
}

export function closeSubscriber(subscriber: Subscriber): void {
  subscriber.server.close();
  subscriber.server.closeAllConnections();
}

// ---------- our daemon ----------

export interface Tally {
  delivered: number;
  seconds: number;
  produced: number;
  errors: number;
  drained: boolean;
  cpuMs: number;
}
export const emptyTally = (): Tally => ({ delivered: 0, seconds: 0, produced: 0, errors: 0, drained: true, cpuMs: 0 });
export const rateOf = (tally: Tally) => Math.round(tally.delivered / tally.seconds);

/**
 * One round of scenario 4 by one contender: produced for `seconds` after a
 * one-second warm-up, counted until the last delivery arrived, with the CPU
 * time of `pids` meanwhile.
 */
export async function round(kit: BenchKit, subscriber: Subscriber, produce: (seconds: number) => Promise<Load>, pids: () => number[], seconds: number, tally: Tally): Promise<void> {
  const cpu = () => pids().reduce((sum, pid) => sum + kit.cpuMs(pid), 0);
  const warmUp = await produce(1);
  await kit.waitUntil(() => subscriber.received >= warmUp.ok && performance.now() - subscriber.lastAt > 300, 60_000);
  const before = subscriber.received;
  const cpuBefore = cpu();
  const started = performance.now();
  const produced = await produce(seconds);
  const drained = await kit.waitUntil(() => subscriber.received - before >= produced.ok, 60_000);
  tally.seconds += ((drained ? subscriber.lastAt : performance.now()) - started) / 1000;
  tally.cpuMs += cpu() - cpuBefore;
  tally.delivered += subscriber.received - before;
  tally.produced += produced.ok;
  tally.errors += produced.errors;
  tally.drained &&= drained;
}

export async function oursRound(kit: BenchKit, seconds: number, tally: Tally): Promise<void> {
  const subscriber = await kit.startSubscriber();
  const daemon = await kit.startDaemon();
  try {
    const token = await subscribe(kit, daemon, subscriber.url);
    const options = {
      url: `${daemon.url}/api/workspaces/bench/events/publish`,
      method: 'POST' as const,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ eventKey: 'bench.tick', payload: { dealId: 'D-1', amount: 1200, currency: 'EUR' } }),
      connections: 50,
    };
    await round(kit, subscriber, (duration) => kit.load({ ...options, duration }), () => [daemon.child.pid!], seconds, tally);
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
    closeSubscriber(subscriber);
  }
}

export async function bullRound(kit: BenchKit, seconds: number, tally: Tally): Promise<void> {
  const redis = (await startRedis(kit))!;
  const subscriber = await kit.startSubscriber();
  const peer = await startBullPeer(kit, redis, subscriber.url);
  try {
    await peer.ask({ type: 'work' });
    await round(kit, subscriber, (duration) => peer.ask({ type: 'produce', seconds: duration, producers: 50 }), () => [peer.child.pid!, redis.process.pid!], seconds, tally);
  } finally {
    await peer.stop();
    await redis.stop();
    closeSubscriber(subscriber);
  }
}

const megabytes = (bytes: number) => Math.round(bytes / 1024 / 1024);

/** Ended, by an exit or a signal (a daemon out of memory aborts: exitCode stays null). */
const gone = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;
const howItEnded = (child: ChildProcess) => (child.exitCode !== null ? `exit code ${child.exitCode}` : `signal ${child.signalCode}`);

/** Fetches until `path` answers 200; the moment it did. */
async function firstOk(base: string, path: string, timeoutMs: number, child: ChildProcess): Promise<number | null> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline && !gone(child)) {
    try {
      const response = await fetch(base + path);
      await response.arrayBuffer();
      if (response.status === 200) return performance.now();
    } catch {
      // not answering yet
    }
    await sleep(20);
  }
  return null;
}

export async function measureBacklog(base: Load, kit: BenchKit): Promise<void> {
  const events = Number(process.env.BENCH_BACKLOG_EVENTS ?? (kit.QUICK ? 100_000 : 1_000_000));
  if (!Number.isInteger(events) || events < 1) throw new Error(`BENCH_BACKLOG_EVENTS: a whole number of events, not "${process.env.BENCH_BACKLOG_EVENTS}"`);
  const count = events.toLocaleString('en');
  const missing = bullmqMissing();
  if (missing) console.error(`16: BullMQ peer not measured: ${missing}`);

  // 16h: scenario 4 beside BullMQ, alternated rounds; without the peer, ours alone (16e's reference).
  const rounds = kit.QUICK ? 1 : 2;
  const seconds = kit.PUBLISH_SECONDS / (2 * rounds);
  const ours = emptyTally();
  const bull = emptyTally();
  for (let n = 0; n < rounds; n += 1) {
    const order = n % 2 === 0 ? ['ours', 'bull'] : ['bull', 'ours'];
    for (const name of order) {
      if (name === 'ours') await oursRound(kit, seconds, ours);
      else if (!missing) await bullRound(kit, seconds, bull);
    }
  }
  const scenario4 = rateOf(ours);
  const length = `${rounds} x ${seconds} s`;
  if (!missing) {
    const ratio = scenario4 / rateOf(bull);
    kit.record({
      scenario: `16h. scenario 4 vs BullMQ + Redis (50 producers, a worker POSTing each job), ${length} each, alternated`,
      value: Math.round(ratio * 100) / 100,
      unit: `x BullMQ's rate (${scenario4.toLocaleString('en')} vs ${rateOf(bull).toLocaleString('en')}/s)`,
      p50: null,
      p99: null,
      ratio: scenario4 / base.rps,
      rssMb: null,
      target: ">= 1.2x BullMQ's delivered events/s",
      met: ratio >= 1.2 && ours.drained && bull.drained && ours.errors === 0 && bull.errors === 0,
      note:
        `ours ${ours.produced} acknowledged, ${ours.delivered} delivered, ${Math.round((ours.cpuMs * 1000) / ours.delivered)} µs of daemon CPU per event; ` +
        `BullMQ ${bull.produced} jobs added, ${bull.delivered} delivered, ${Math.round((bull.cpuMs * 1000) / bull.delivered)} µs of peer + Redis CPU per job; ` +
        `Redis syncs its append-only file every second, the daemon fsyncs before it answers${ours.drained && bull.drained ? '' : ' (NOT all delivered within 60 s)'}`,
    });
  }

  const bullBacklog = missing ? null : await measureBullBacklog(kit, events);
  if (bullBacklog) {
    kit.record({
      scenario: `16f. BullMQ: ${count} jobs of 1 KB queued, no worker: Redis used_memory over its empty figure`,
      value: bullBacklog.growthMb,
      unit: 'MB more',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: bullBacklog.usedMb,
      target: 'the peer of 16b',
      met: true,
      note: `added with addBulk (1,000 a call) at ${bullBacklog.addRate.toLocaleString('en')} jobs/s; peer process RSS ${bullBacklog.peerRssMb} MB`,
    });
    kit.record({
      scenario: `16g. BullMQ: a worker drains the ${count} jobs`,
      value: bullBacklog.drainRate,
      unit: 'jobs/s',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: null,
      target: 'the peer of 16e',
      met: bullBacklog.delivered === events && bullBacklog.duplicates === 0,
      note: `${bullBacklog.delivered} of ${events} delivered, ${bullBacklog.duplicates} twice`,
    });
  }

  await measureOurBacklog(kit, base, events, scenario4, length, bullBacklog);
}

interface BullBacklog {
  growthMb: number;
  usedMb: number;
  addRate: number;
  peerRssMb: number;
  drainRate: number;
  delivered: number;
  duplicates: number;
}

async function measureBullBacklog(kit: BenchKit, events: number): Promise<BullBacklog> {
  const redis = (await startRedis(kit))!;
  const subscriber = await startBacklogSubscriber(0);
  subscriber.up();
  const peer = await startBullPeer(kit, redis, subscriber.url);
  try {
    await sleep(1_000);
    const empty = await redis.usedMemory();
    const filled = await peer.ask({ type: 'fill', count: events, payloadBytes: PAYLOAD_BYTES });
    await sleep(2_000);
    const used = await redis.usedMemory();
    const peerRssMb = kit.rssMb(peer.child.pid!);
    const started = performance.now();
    await peer.ask({ type: 'work' });
    const drained = await kit.waitUntil(() => subscriber.deliveries.size >= events, Math.max(60_000, events * 2));
    const seconds = ((drained ? subscriber.lastAt : performance.now()) - started) / 1000;
    return {
      growthMb: megabytes(used - empty),
      usedMb: megabytes(used),
      addRate: filled.rps,
      peerRssMb,
      drainRate: Math.round(subscriber.deliveries.size / seconds),
      delivered: subscriber.deliveries.size,
      duplicates: subscriber.duplicates,
    };
  } finally {
    await peer.stop();
    await redis.stop();
    await subscriber.close();
  }
}

/**
 * RSS "at rest" is read after REST_MS without requests: V8 gives back the
 * heap a burst grew (publishing, replaying a journal) only once its memory
 * reducer sees the process quiet, some 10 to 30 s. The figure EARLY_MS in
 * is reported beside it.
 */
const REST_MS = 30_000;
const EARLY_MS = 5_000;

/** `rssMb` read EARLY_MS and REST_MS into a rest. */
export async function atRest(rssMb: () => number): Promise<{ rss: number; early: number }> {
  await sleep(EARLY_MS);
  const early = rssMb();
  await sleep(REST_MS - EARLY_MS);
  return { rss: rssMb(), early };
}

/**
 * How long after the first failure the subscriber's Retry-After puts every
 * retry: past the publishing, the rest, the restart and its rest: 0.3-0.7 ms an
 * event here, plus the two rests (BENCH_BACKLOG_RESUME_MS overrides it). Should the
 * bench run past it, retries that come early are sent a minute further.
 */
const resumeAfterMs = (events: number) => Number(process.env.BENCH_BACKLOG_RESUME_MS ?? Math.max(30_000, events) + 2 * REST_MS);

async function measureOurBacklog(kit: BenchKit, base: Load, events: number, scenario4: number, scenario4Length: string, bull: BullBacklog | null): Promise<void> {
  const count = events.toLocaleString('en');
  const resumeAfter = resumeAfterMs(events);
  const subscriber = await startBacklogSubscriber(resumeAfter);
  // Retry-After decides when each retry comes; the schedule allows 20 retries, an hour apart
  // where the subscriber names no time. Retention keeps every event (its default keeps 100,000
  // a workspace), so that it takes no part in the measurement.
  const env = { PLATFORM_RETRY_SCHEDULE: Array(20).fill(3_600_000).join(','), PLATFORM_EVENT_RETENTION_COUNT: String(Math.max(100_000, 2 * events)) };
  let daemon = await kit.startDaemon(undefined, env);
  /** NaN once the daemon is gone, rather than a failed read of /proc ending the group. */
  const rssOf = (child: ChildProcess) => (gone(child) ? NaN : kit.rssMb(child.pid!));
  const dataDir = daemon.dataDir;
  try {
    const token = await subscribe(kit, daemon, subscriber.url);
    const { rss: emptyRss } = await atRest(() => rssOf(daemon.child));
    kit.record({
      scenario: '16a. RSS at rest, the empty daemon (16b-16d count from it)',
      value: emptyRss,
      unit: 'MB',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: emptyRss,
      target: 'none (the baseline of 16b and 16d)',
      met: true,
    });

    const acknowledged = new Set<string>();
    const publishStarted = performance.now();
    const published = await kit.load({
      url: daemon.url,
      connections: 50,
      amount: events,
      timeout: 60,
      requests: [
        {
          method: 'POST',
          path: '/api/workspaces/bench/events/publish',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ eventKey: 'bench.tick', payload: { text: 'x'.repeat(PAYLOAD_BYTES) } }),
          onResponse: (status, body) => {
            const eventId = status === 200 ? /"eventId":"([^"]+)"/.exec(body)?.[1] : undefined;
            if (eventId) acknowledged.add(eventId);
          },
        },
      ],
    });
    const publishSeconds = (performance.now() - publishStarted) / 1000;
    // Every delivery attempted once and failed (or the daemon gone).
    await kit.waitUntil(() => subscriber.failures >= acknowledged.size || gone(daemon.child), Math.max(60_000, events));
    const publishNote = `${acknowledged.size} of ${count} publishes acknowledged at ${Math.round(acknowledged.size / publishSeconds).toLocaleString('en')}/s (${published.errors} errors)`;
    if (gone(daemon.child)) {
      kit.record({
        scenario: `16b. RSS at rest with ${count} pending deliveries of 1 KB, over 16a`,
        value: NaN,
        unit: 'MB more',
        p50: null,
        p99: null,
        ratio: null,
        rssMb: null,
        target: '<= 100 MB more',
        met: false,
        note: `the daemon ended (${howItEnded(daemon.child)}) while the backlog was published; ${publishNote}`,
      });
      return;
    }
    const { rss: backlogRss, early: backlogEarly } = await atRest(() => rssOf(daemon.child));
    kit.record({
      scenario: `16b. RSS at rest with ${count} pending deliveries of 1 KB (subscriber down), over 16a`,
      value: backlogRss - emptyRss,
      unit: 'MB more',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: backlogRss,
      target: `<= 100 MB more than 16a (${emptyRss} MB)`,
      met: backlogRss - emptyRss <= 100,
      note: `${publishNote}; ${subscriber.failures} attempts failed with 503; ${backlogEarly - emptyRss} MB more ${EARLY_MS / 1000} s into the rest${bull ? `; BullMQ's Redis held ${bull.growthMb} MB more for the same backlog (16f)` : ''}`,
    });

    await daemon.stop();
    const spawned = performance.now();
    daemon = await kit.startDaemon(dataDir, env);
    const ready = await firstOk(daemon.url, '/api/health/ready', 120_000, daemon.child);
    const restartMs = ready === null ? NaN : Math.round(ready - spawned);
    kit.record({
      scenario: `16c. restart on ${count} pending deliveries: spawn to the first 200 of /api/health/ready`,
      value: restartMs,
      unit: 'ms',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: rssOf(daemon.child),
      target: '<= 10,000 ms',
      met: ready !== null && restartMs <= 10_000,
      note: ready === null ? `not ready within 120 s${gone(daemon.child) ? ` (ended: ${howItEnded(daemon.child)})` : ''}` : undefined,
    });
    if (ready === null) return;
    const { rss: restartedRss, early: restartedEarly } = await atRest(() => rssOf(daemon.child));
    const healthy = (await firstOk(daemon.url, '/api/health/ready', 5_000, daemon.child)) !== null;
    kit.record({
      scenario: '16d. RSS at rest after that restart, over 16a',
      value: restartedRss - emptyRss,
      unit: 'MB more',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: restartedRss,
      target: `<= 100 MB more than 16a (${emptyRss} MB)`,
      met: restartedRss - emptyRss <= 100 && healthy,
      note: `${restartedEarly - emptyRss} MB more ${EARLY_MS / 1000} s into the rest${healthy ? '' : `; NOT ready ${REST_MS / 1000} s after the restart`}`,
    });

    subscriber.up();
    const upAt = Date.now();
    // The retries fall due at `resumeAt` (wall clock); drained when every acknowledged event arrived.
    const drainStartsIn = Math.max(0, subscriber.resumeAt - upAt);
    const drainFrom = performance.now() + drainStartsIn;
    const drained = await kit.waitUntil(() => subscriber.eventIds.size >= acknowledged.size || gone(daemon.child), drainStartsIn + Math.max(60_000, events * 2));
    // Give stragglers (duplicates) a moment to show.
    await sleep(1_000);
    const drainSeconds = (subscriber.lastAt - drainFrom) / 1000;
    const delivered = subscriber.eventIds.size;
    const missingEvents = [...acknowledged].filter((id) => !subscriber.eventIds.has(id)).length;
    const unacknowledged = [...subscriber.eventIds].filter((id) => !acknowledged.has(id)).length;
    const rate = Math.round(delivered / drainSeconds);
    kit.record({
      scenario: `16e. drain of the ${count} once the subscriber is back (all retries due at one instant)`,
      value: rate,
      unit: 'deliveries/s',
      p50: null,
      p99: null,
      ratio: rate / base.rps,
      rssMb: rssOf(daemon.child),
      target: `>= 90 % of scenario 4's rate in this run (${scenario4.toLocaleString('en')} events/s, ${scenario4Length})`,
      met: rate >= 0.9 * scenario4 && drained && !gone(daemon.child) && missingEvents === 0 && subscriber.duplicates === 0,
      note:
        `${((rate / scenario4) * 100).toFixed(0)} % of scenario 4's rate; ${delivered} events delivered, ${subscriber.duplicates} deliveries twice, ${missingEvents} acknowledged events missing, ` +
        `${unacknowledged} delivered that were not acknowledged; ${subscriber.earlyRetries} retries came before the subscriber was back; ` +
        `retries due ${Math.round(resumeAfter / 1000)} s after the first failure${bull ? `; BullMQ drained its backlog at ${bull.drainRate.toLocaleString('en')} jobs/s (16g)` : ''}` +
        (gone(daemon.child) ? `; the daemon ended (${howItEnded(daemon.child)})` : ''),
    });
  } finally {
    if (!gone(daemon.child)) await daemon.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await subscriber.close();
  }
}
