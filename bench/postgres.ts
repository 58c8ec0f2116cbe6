/**
 * 14: the PostgreSQL backend (docs/scaling.md), run last in a
 * full bench and alone with `--only postgres`. One embedded PostgreSQL on this
 * machine serves the whole group, with a fresh database per scenario:
 *
 *  - catalog detail GET and search (as scenarios 1 and 2) on PostgreSQL beside
 *    the same on files, measured in the same run;
 *  - publish + delivery (scenario 4) on PostgreSQL with one daemon and with
 *    two daemons on one database (also each limited to the same share of a
 *    core, see DAEMON_CPU_SHARE), beside graphile-worker, the standard
 *    PostgreSQL job queue for Node, doing the same delivery work
 *    (bench/graphile-peer.ts), and beside scenario 4 on files, in alternated
 *    rounds; with the CPU time each delivery took in the daemon (or the peer)
 *    and in PostgreSQL, which a busy machine moves much less than throughput;
 *  - publish-to-delivery latency at 2,000 events/s, and graphile-worker's
 *    add-to-delivery latency at 2,000 jobs/s.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../dev/embedded-postgres.js';
import type { PeerCommand, Produced } from './graphile-peer.js';
import { startPeerProcess, type PeerProcess } from './peer-process.js';
import { subscribe, type BenchKit, type Load, type Started, type Subscriber } from './kit.js';

// ---------- the database server ----------

/**
 * How the bench's PostgreSQL differs from a fresh cluster's defaults, as one
 * would set it up to benchmark on one machine. Durability is left as it is:
 * fsync, full_page_writes and synchronous_commit stay on, because a publish is
 * acknowledged only once it is durable, as on files (fsync before the answer).
 */
const POSTGRES_SETTINGS = {
  // Room for every pool at once: two daemons (10 connections and a LISTEN one each),
  // graphile-worker's runner (34) and producers (50), and the bench's own.
  max_connections: '200',
  // Every table and index of the bench fits, so reads never wait for the OS cache (default 128MB).
  shared_buffers: '512MB',
  // No checkpoint inside a measurement: a 30 s publish run writes a few hundred MB of WAL,
  // and the default max_wal_size (1GB) and checkpoint_timeout (5 min) would put one in some runs but not others.
  max_wal_size: '4GB',
  checkpoint_timeout: '30min',
  // Short OLTP statements only: compiling a plan never pays, and would show as p99 spikes.
  jit: 'off',
  synchronous_commit: 'on',
  fsync: 'on',
  full_page_writes: 'on',
};

let databases = 0;

/** A new, empty database on the bench's cluster, by URL. */
const freshDatabase = (cluster: EmbeddedPostgres) => cluster.createDatabase(`bench_${(databases += 1)}`);

async function startCluster(kit: BenchKit): Promise<EmbeddedPostgres> {
  // The database is neither the daemon's nor the load's: it may use both cores, as a server
  // of its own would (its processes inherit this affinity when they start).
  if (kit.PINNED) execFileSync('taskset', ['-cp', '0,1', String(process.pid)], { stdio: 'ignore' });
  try {
    return await startEmbeddedPostgres('bench', POSTGRES_SETTINGS);
  } finally {
    if (kit.PINNED) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  }
}

// ---------- a daemon's share of a core ----------

/**
 * "Two daemons never slower than one" asks whether a second daemon adds
 * throughput or the shared database holds them back. On this 2-core machine
 * one daemon, PostgreSQL and the load together already use both cores, so two
 * daemons pinned to the daemon's core measure two processes splitting it, not
 * the design. 14e therefore also gives every daemon the same share of a core
 * (a cgroup CPU quota), as separate machines would: one daemon against two,
 * each limited alike, in the same rounds. 40 % leaves room on the machine for
 * the second daemon's share beside PostgreSQL and the load.
 */
const DAEMON_CPU_SHARE = 0.4;
const CFS_PERIOD_US = 100_000;

/** Where a cgroup may get a CPU quota: v1's cpu hierarchy, or v2 with the cpu controller on. */
const CPU_CGROUP_LAYOUTS = [
  { root: '/sys/fs/cgroup/cpu', quota: (us: number) => ({ 'cpu.cfs_period_us': String(CFS_PERIOD_US), 'cpu.cfs_quota_us': String(us) }) },
  { root: '/sys/fs/cgroup', quota: (us: number) => ({ 'cpu.max': `${us} ${CFS_PERIOD_US}` }) },
];

/**
 * A new cgroup named `name` whose CPU quota this process may set, with the
 * files that set it to `us` microseconds per period; null where it may not
 * (not root, no cpu controller). A folder made where no cgroup is (v1
 * machines mount a tmpfs at /sys/fs/cgroup) lacks those files and limits
 * nothing: it is removed and not taken.
 */
function cpuCgroup(name: string, us: number): { folder: string; quota: Record<string, string> } | null {
  for (const { root, quota } of CPU_CGROUP_LAYOUTS) {
    const folder = join(root, name);
    try {
      mkdirSync(folder);
    } catch {
      continue;
    }
    const files = quota(us);
    if (Object.keys(files).every((file) => existsSync(join(folder, file)))) return { folder, quota: files };
    releaseCpuLimit(folder);
  }
  return null;
}

/** Whether this process may limit daemons to a share of a core. */
function canLimitCpu(): boolean {
  const probe = cpuCgroup(`platform-bench-probe-${process.pid}`, 0);
  if (probe) releaseCpuLimit(probe.folder);
  return probe !== null;
}

/**
 * Limits the process `pid` (every thread it has and starts) to `share` of a
 * core, in a cgroup of its own; returns that cgroup's folder, for
 * `releaseCpuLimit` once the process has ended, or null where it cannot.
 */
function limitCpu(pid: number, share: number): string | null {
  const cgroup = cpuCgroup(`platform-bench-${pid}`, Math.round(share * CFS_PERIOD_US));
  if (!cgroup) return null;
  try {
    for (const [file, value] of Object.entries(cgroup.quota)) writeFileSync(join(cgroup.folder, file), value);
    writeFileSync(join(cgroup.folder, 'cgroup.procs'), String(pid));
    return cgroup.folder;
  } catch {
    releaseCpuLimit(cgroup.folder);
    return null;
  }
}

function releaseCpuLimit(folder: string): void {
  try {
    rmdirSync(folder);
  } catch {
    // Still holds a process, or gone already: left as it is (nothing reads it again).
  }
}

// ---------- our daemon on the database ----------

/** Every daemon on one database must share it (secrets are encrypted with it). */
const MASTER_KEY = randomBytes(32).toString('base64');

/** A daemon on `databaseUrl` (its data directory holds nothing but what stays on files). */
async function startOnDatabase(kit: BenchKit, databaseUrl: string): Promise<Started> {
  return kit.startDaemon(mkdtempSync(join(tmpdir(), 'platform-bench-')), { PLATFORM_DATABASE_URL: databaseUrl, PLATFORM_MASTER_KEY: MASTER_KEY });
}

async function stopAll(daemons: Started[]): Promise<void> {
  for (const daemon of daemons) {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}

// ---------- CPU time ----------

/**
 * CPU time (ms) of the whole PostgreSQL cluster: the postmaster, its children
 * running now (backends, WAL writer, checkpointer…), and the children that
 * ended (a backend whose connection closed), which the kernel adds to it.
 */
function databaseCpuMs(cluster: EmbeddedPostgres): number {
  const postmaster = cluster.process.pid!;
  const [utime, stime, cutime, cstime] = statFields(postmaster).slice(11, 15).map(Number) as [number, number, number, number];
  let ticks = utime + stime + cutime + cstime;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / 100;
}

/** The fields of /proc/PID/stat after the command's name (state first); none for a process that is gone. */
function statFields(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  } catch {
    return [];
  }
}

// ---------- measurements shared by ours and graphile-worker's ----------

/** A contender of the delivery rounds, started afresh each round on a fresh database. */
interface Contender {
  start(subscriber: Subscriber): Promise<Session>;
}

interface Session {
  /** Events (or jobs) produced for `seconds`, each answered once durable. */
  produce(seconds: number): Promise<Load>;
  /** The processes doing the delivery work (our daemons, or the peer): their CPU time and memory are its. */
  pids: number[];
  stop(): Promise<void>;
}

/** What the rounds of one contender add up to. */
interface Tally {
  delivered: number;
  seconds: number;
  produced: number;
  errors: number;
  drained: boolean;
  /** The slowest round's publish (or add) latency. */
  p50: number;
  p99: number;
  cpuMs: number;
  databaseCpuMs: number;
  peakRss: number;
}

const emptyTally = (): Tally => ({ delivered: 0, seconds: 0, produced: 0, errors: 0, drained: true, p50: 0, p99: 0, cpuMs: 0, databaseCpuMs: 0, peakRss: 0 });
const rateOf = (tally: Tally) => Math.round(tally.delivered / tally.seconds);
const microsPerEvent = (ms: number, tally: Tally) => Math.round((ms * 1000) / tally.delivered);

/**
 * One round of a contender: events produced for `seconds` and delivered to a
 * subscriber of its own, counted from the start until the last of them
 * arrived, with the CPU time its processes and PostgreSQL used meanwhile. A
 * one-second warm-up first, delivered in full and quiet before the round starts.
 */
async function measureRound(kit: BenchKit, cluster: EmbeddedPostgres, contender: Contender, seconds: number, tally: Tally): Promise<void> {
  const subscriber = await kit.startSubscriber();
  const session = await contender.start(subscriber);
  const rssTimer = setInterval(() => (tally.peakRss = Math.max(tally.peakRss, ...session.pids.map((pid) => kit.rssMb(pid)))), 250);
  try {
    const warmUp = await session.produce(1);
    // Requests still in flight when a load ends are not counted but are delivered: wait for quiet too.
    await kit.waitUntil(() => subscriber.received >= warmUp.ok && performance.now() - subscriber.lastAt > 300, 60_000);
    const before = subscriber.received;
    const cpuBefore = session.pids.reduce((sum, pid) => sum + kit.cpuMs(pid), 0);
    const databaseBefore = databaseCpuMs(cluster);
    const started = performance.now();
    const produced = await session.produce(seconds);
    const drained = await kit.waitUntil(() => subscriber.received - before >= produced.ok, 60_000);
    tally.seconds += ((drained ? subscriber.lastAt : performance.now()) - started) / 1000;
    tally.cpuMs += session.pids.reduce((sum, pid) => sum + kit.cpuMs(pid), 0) - cpuBefore;
    tally.databaseCpuMs += databaseCpuMs(cluster) - databaseBefore;
    tally.delivered += subscriber.received - before;
    tally.produced += produced.ok;
    tally.errors += produced.errors;
    tally.drained &&= drained;
    tally.p50 = Math.max(tally.p50, produced.p50);
    tally.p99 = Math.max(tally.p99, produced.p99);
  } finally {
    clearInterval(rssTimer);
    await session.stop();
    closeSubscriber(subscriber);
  }
}

const PACED_RATE = 2000;

/** Produced at PACED_RATE for the paced duration of scenario 5; each delivery timed from its `sentAt`. */
async function measurePaced(kit: BenchKit, subscriber: Subscriber, produce: (seconds: number) => Promise<Load>): Promise<{ p50: number; p99: number; timed: number; produced: Load }> {
  subscriber.latencies.length = 0;
  const before = subscriber.received;
  const produced = await produce(kit.QUICK ? 3 : 15);
  await kit.waitUntil(() => subscriber.received - before >= produced.ok, 30_000);
  return { p50: kit.percentile(subscriber.latencies, 50), p99: kit.percentile(subscriber.latencies, 99), timed: subscriber.latencies.length, produced };
}

function closeSubscriber(subscriber: Subscriber): void {
  subscriber.server.close();
  subscriber.server.closeAllConnections();
}

/** Produced and delivered, and the CPU each delivered one took in `worker` and in PostgreSQL. */
const tallyNote = (tally: Tally, verb: string, worker: string) =>
  `${tally.produced} ${verb}, ${tally.delivered} delivered${tally.drained ? '' : ' (NOT all delivered within 60 s)'}; ` +
  `CPU per delivery ${microsPerEvent(tally.cpuMs, tally)} µs in ${worker}, ${microsPerEvent(tally.databaseCpuMs, tally)} µs in PostgreSQL`;

// ---------- graphile-worker ----------

type Peer = PeerProcess<PeerCommand, Produced>;

const PEER = fileURLToPath(new URL('graphile-peer.ts', import.meta.url));

/** bench/graphile-peer.ts on the daemon's core, like a daemon, delivering to `subscriberUrl`. */
function startPeer(kit: BenchKit, databaseUrl: string, subscriberUrl: string): Promise<Peer> {
  return startPeerProcess('graphile-worker peer', [process.execPath, '--import', 'tsx', PEER], { PEER_DATABASE_URL: databaseUrl, PEER_SUBSCRIBER_URL: subscriberUrl }, kit.PINNED);
}

const GRAPHILE_RATE = '14c. graphile-worker: add + deliver to 1 subscriber';
const GRAPHILE_PACED = '14f. graphile-worker paced 2,000 jobs/s: add-to-delivery latency';

const graphileWorker = (kit: BenchKit, cluster: EmbeddedPostgres): Contender => ({
  async start(subscriber) {
    const peer = await startPeer(kit, await freshDatabase(cluster), subscriber.url);
    return { produce: (seconds) => peer.ask({ type: 'produce', seconds, producers: 50 }), pids: [peer.child.pid!], stop: () => peer.stop() };
  },
});

/** 14f: graphile-worker adding jobs at PACED_RATE; answers its p99. */
async function measureGraphilePaced(kit: BenchKit, cluster: EmbeddedPostgres): Promise<number> {
  const subscriber = await kit.startSubscriber();
  const peer = await startPeer(kit, await freshDatabase(cluster), subscriber.url);
  try {
    const paced = await measurePaced(kit, subscriber, (seconds) => peer.ask({ type: 'paced', seconds, rate: PACED_RATE }));
    kit.record({
      scenario: GRAPHILE_PACED,
      value: paced.p99,
      unit: 'ms p99',
      p50: paced.p50,
      p99: paced.p99,
      ratio: null,
      rssMb: kit.rssMb(peer.child.pid!),
      target: 'the peer of 14g',
      met: paced.produced.errors === 0 && paced.timed === paced.produced.ok,
      note: `${paced.timed} deliveries timed; added at ${paced.produced.rps}/s, each add ${paced.produced.p50.toFixed(1)} ms median, ${paced.produced.p99.toFixed(1)} ms p99`,
    });
    return paced.p99;
  } finally {
    await peer.stop();
    closeSubscriber(subscriber);
  }
}

// ---------- ours: catalog ----------

const CATALOG_GET = '14a. catalog detail GET on PostgreSQL (1,000 ext. x 5 versions, 50 conn.)';
const CATALOG_SEARCH = '14b. search over 10,000 extensions on PostgreSQL, limit 20';

/**
 * Scenarios 1 and 2 on PostgreSQL beside the same on files, seeded alike. The
 * detail GET alternates files and PostgreSQL twice, so that drift in the
 * machine's load falls on both alike.
 */
async function measureCatalog(kit: BenchKit, base: Load, cluster: EmbeddedPostgres): Promise<void> {
  const onDatabase = await startOnDatabase(kit, await freshDatabase(cluster));
  const onFiles = await kit.startDaemon();
  try {
    for (const daemon of [onFiles, onDatabase]) {
      const token = await kit.login(daemon.url);
      await kit.seedCatalog(daemon.url, token, 0, 1000, 5);
      await kit.seedCatalog(daemon.url, token, 1000, 9000, kit.QUICK ? 0 : 1);
    }
    const detail = (daemon: Started) => ({ url: `${daemon.url}/api/marketplace/extensions/ext-00042`, connections: 50, duration: kit.SECONDS });
    const totals = { files: [] as Load[], database: [] as Load[] };
    for (let round = 0; round < 2; round += 1) {
      for (const [name, daemon] of [['files', onFiles], ['database', onDatabase]] as const) {
        await kit.load({ ...detail(daemon), duration: 1 });
        totals[name].push(await kit.load(detail(daemon)));
      }
    }
    const mean = (loads: Load[], key: 'rps' | 'p50' | 'p99') => loads.reduce((sum, load) => sum + load[key], 0) / loads.length;
    const filesRps = Math.round(mean(totals.files, 'rps'));
    const databaseRps = Math.round(mean(totals.database, 'rps'));
    kit.record({
      scenario: CATALOG_GET,
      value: databaseRps,
      unit: 'req/s',
      p50: mean(totals.database, 'p50'),
      p99: mean(totals.database, 'p99'),
      ratio: databaseRps / base.rps,
      rssMb: kit.rssMb(onDatabase.child.pid!),
      target: `within 20 % of files (${filesRps.toLocaleString('en')} req/s)`,
      met: databaseRps >= 0.8 * filesRps && totals.database.every((load) => load.errors === 0),
      note: `${((databaseRps / filesRps) * 100).toFixed(0)} % of files' rate, mean of 2 rounds alternated with files (files p99 ${mean(totals.files, 'p99')} ms)`,
    });

    const search = (daemon: Started) => ({ url: `${daemon.url}/api/marketplace/extensions?search=ledger%20payroll&limit=20`, connections: 50, duration: kit.SECONDS });
    const filesSearch = await kit.load(search(onFiles));
    const databaseSearch = await kit.load(search(onDatabase));
    kit.record({
      scenario: CATALOG_SEARCH,
      value: databaseSearch.rps,
      unit: 'req/s',
      p50: databaseSearch.p50,
      p99: databaseSearch.p99,
      ratio: databaseSearch.rps / base.rps,
      rssMb: kit.rssMb(onDatabase.child.pid!),
      target: `>= 5,000 req/s (files: ${filesSearch.rps.toLocaleString('en')} req/s)`,
      met: databaseSearch.rps >= 5_000 && databaseSearch.errors === 0,
      note: `${((databaseSearch.rps / filesSearch.rps) * 100).toFixed(0)} % of files' rate in the same run`,
    });
  } finally {
    await stopAll([onFiles, onDatabase]);
  }
}

// ---------- ours: publish + delivery ----------

const ONE_DAEMON = '14d. publish + deliver on PostgreSQL, 1 daemon';
const TWO_DAEMONS = '14e. publish + deliver on PostgreSQL, 2 daemons on one database';
const OURS_PACED = '14g. paced 2,000 events/s on PostgreSQL: publish-to-delivery latency';


/** Scenario 4's publish request against `daemon`, signed in there. */
async function publishOptions(kit: BenchKit, daemon: Started, connections: number) {
  return {
    url: `${daemon.url}/api/workspaces/bench/events/publish`,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${await kit.login(daemon.url)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ eventKey: 'bench.tick', payload: { dealId: 'D-1', amount: 1200, currency: 'EUR' } }),
    connections,
  };
}

/** 50 connections split evenly over `daemons`, all publishing at once; the result as one load. */
async function publishAcross(kit: BenchKit, daemons: Started[]): Promise<(seconds: number) => Promise<Load>> {
  const options = await Promise.all(daemons.map((daemon) => publishOptions(kit, daemon, 50 / daemons.length)));
  return async (seconds) => {
    const loads = await Promise.all(options.map((option) => kit.load({ ...option, duration: seconds })));
    return {
      rps: loads.reduce((sum, load) => sum + load.rps, 0),
      ok: loads.reduce((sum, load) => sum + load.ok, 0),
      errors: loads.reduce((sum, load) => sum + load.errors, 0),
      // Per daemon's clients; the slower one stands for both.
      p50: Math.max(...loads.map((load) => load.p50)),
      p99: Math.max(...loads.map((load) => load.p99)),
    };
  };
}

/** Our daemons, subscribed through the first, publishing from 50 connections split evenly over them; `stop` ends them. */
async function daemonSession(kit: BenchKit, daemons: Started[], subscriber: Subscriber, stop = () => stopAll(daemons)): Promise<Session> {
  try {
    await subscribe(kit, daemons[0]!, subscriber.url);
    return { produce: await publishAcross(kit, daemons), pids: daemons.map((daemon) => daemon.child.pid!), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `count` daemons on one fresh database; with `cpuShare`, each limited to that share of a core. */
const onPostgres = (kit: BenchKit, cluster: EmbeddedPostgres, count: number, cpuShare?: number): Contender => ({
  async start(subscriber) {
    const databaseUrl = await freshDatabase(cluster);
    const daemons: Started[] = [];
    const limits: string[] = [];
    const stop = async () => {
      await stopAll(daemons);
      limits.forEach(releaseCpuLimit);
    };
    try {
      for (let n = 0; n < count; n += 1) {
        const daemon = await startOnDatabase(kit, databaseUrl);
        daemons.push(daemon);
        if (cpuShare === undefined) continue;
        const limit = limitCpu(daemon.child.pid!, cpuShare);
        if (!limit) throw new Error('a daemon could not be limited to a share of a core: a cgroup CPU quota needs root and the cpu controller');
        limits.push(limit);
      }
    } catch (error) {
      await stop();
      throw error;
    }
    return daemonSession(kit, daemons, subscriber, stop);
  },
});

/** Scenario 4 on files, in the same rounds: what the database costs beside it. */
const onFiles = (kit: BenchKit): Contender => ({
  start: async (subscriber) => daemonSession(kit, [await kit.startDaemon()], subscriber),
});

/** 14g: one daemon publishing at PACED_RATE from 20 connections, as scenario 5. */
async function measureOurPaced(kit: BenchKit, cluster: EmbeddedPostgres, graphileP99: number): Promise<void> {
  const subscriber = await kit.startSubscriber();
  const daemon = await startOnDatabase(kit, await freshDatabase(cluster));
  try {
    await subscribe(kit, daemon, subscriber.url);
    const options = await publishOptions(kit, daemon, 20);
    const paced = await measurePaced(kit, subscriber, (seconds) =>
      kit.load({
        ...options,
        duration: seconds,
        overallRate: PACED_RATE,
        requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify({ eventKey: 'bench.tick', payload: { sentAt: Date.now(), dealId: 'D-2' } }) }) }],
      }),
    );
    kit.record({
      scenario: OURS_PACED,
      value: paced.p99,
      unit: 'ms p99',
      p50: paced.p50,
      p99: paced.p99,
      ratio: null,
      rssMb: kit.rssMb(daemon.child.pid!),
      target: '<= 50 ms p99 at 2,000 events/s',
      // A p99 met at a lower rate than asked is not the target: the rate must have been kept (within 5 %).
      met: paced.p99 <= 50 && paced.produced.rps >= 0.95 * PACED_RATE && paced.produced.errors === 0,
      note: `${paced.timed} deliveries timed; published at ${paced.produced.rps}/s, each publish ${paced.produced.p50} ms median, ${paced.produced.p99} ms p99; graphile-worker's p99 in this run: ${graphileP99} ms`,
    });
  } finally {
    await stopAll([daemon]);
    closeSubscriber(subscriber);
  }
}

/**
 * 14c, 14d and 14e: graphile-worker, one daemon and two daemons on
 * PostgreSQL (without limits, and each limited to DAEMON_CPU_SHARE), and one
 * daemon on files, measured in rounds that alternate
 * them (the second in the reverse order), so that drift in the machine's load
 * falls on all alike; each round starts them afresh on a fresh database.
 */
async function measureDeliveryRounds(kit: BenchKit, base: Load, cluster: EmbeddedPostgres): Promise<void> {
  const rounds = kit.QUICK ? 1 : 2;
  const seconds = kit.PUBLISH_SECONDS / rounds;
  const limited = canLimitCpu();
  const contenders = {
    graphile: graphileWorker(kit, cluster),
    one: onPostgres(kit, cluster, 1),
    two: onPostgres(kit, cluster, 2),
    files: onFiles(kit),
    oneLimited: onPostgres(kit, cluster, 1, DAEMON_CPU_SHARE),
    twoLimited: onPostgres(kit, cluster, 2, DAEMON_CPU_SHARE),
  };
  const names = (Object.keys(contenders) as Array<keyof typeof contenders>).filter((name) => limited || !name.endsWith('Limited'));
  const tallies = Object.fromEntries(names.map((name) => [name, emptyTally()])) as Record<keyof typeof contenders, Tally>;
  for (let round = 0; round < rounds; round += 1) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) await measureRound(kit, cluster, contenders[name], seconds, tallies[name]);
  }
  const { graphile, one, two, files, oneLimited, twoLimited } = tallies;
  const length = `${kit.PUBLISH_SECONDS} s in ${rounds} round${rounds === 1 ? '' : 's'}`;
  kit.record({
    scenario: `${GRAPHILE_RATE}, ${length}, 50 producers`,
    value: rateOf(graphile),
    unit: 'jobs/s',
    p50: graphile.p50,
    p99: graphile.p99,
    ratio: rateOf(graphile) / base.rps,
    rssMb: graphile.peakRss,
    target: 'the peer of 14d (every job delivered)',
    met: graphile.drained && graphile.errors === 0,
    note: tallyNote(graphile, 'jobs added', 'the peer'),
  });
  const graphileShare = (tally: Tally) => `${((rateOf(tally) / rateOf(graphile)) * 100).toFixed(0)} % of graphile-worker's jobs/s`;
  kit.record({
    scenario: `${ONE_DAEMON}, ${length}, 50 conn.`,
    value: rateOf(one),
    unit: 'events/s',
    p50: one.p50,
    p99: one.p99,
    ratio: rateOf(one) / base.rps,
    rssMb: one.peakRss,
    target: `>= 3,000 events/s and >= 90 % of graphile-worker's (${rateOf(graphile).toLocaleString('en')} jobs/s)`,
    met: rateOf(one) >= 3_000 && rateOf(one) >= 0.9 * rateOf(graphile) && one.drained && one.errors === 0,
    note:
      `${graphileShare(one)}; ${tallyNote(one, 'acknowledged', 'the daemon')}; ` +
      `on files in the same rounds ${rateOf(files).toLocaleString('en')} events/s, ${microsPerEvent(files.cpuMs, files)} µs of daemon CPU per event`,
  });
  const share = `${DAEMON_CPU_SHARE * 100} % of a core`;
  const unlimited =
    `without limits, both on the daemon's core: ${rateOf(two).toLocaleString('en')} events/s ` +
    `(${((rateOf(two) / rateOf(one)) * 100).toFixed(0)} % of 14d), ${tallyNote(two, 'acknowledged', 'the two daemons')}`;
  if (!limited) {
    kit.record({
      scenario: `${TWO_DAEMONS}, each limited to ${share}, ${length}, 25 + 25 conn.`,
      value: 0,
      unit: 'events/s',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: null,
      target: `>= 1 daemon's limited alike`,
      met: false,
      note:
        `not measured: limiting a daemon to a share of a core takes a cgroup CPU quota (run the bench as root, with the cpu controller); ${unlimited}`,
    });
    return;
  }
  kit.record({
    scenario: `${TWO_DAEMONS}, each limited to ${share}, ${length}, 25 + 25 conn.`,
    value: rateOf(twoLimited),
    unit: 'events/s',
    p50: twoLimited.p50,
    p99: twoLimited.p99,
    ratio: rateOf(twoLimited) / base.rps,
    rssMb: twoLimited.peakRss,
    target: `>= 1 daemon's limited alike (${rateOf(oneLimited).toLocaleString('en')} events/s)`,
    met: rateOf(twoLimited) >= rateOf(oneLimited) && twoLimited.drained && twoLimited.errors === 0 && oneLimited.drained,
    note:
      `${tallyNote(twoLimited, 'acknowledged', 'the two daemons')}; 1 daemon limited alike: ${tallyNote(oneLimited, 'acknowledged', 'the daemon')}; ${unlimited}`,
  });
}

// ---------- the group ----------

export async function measurePostgres(base: Load, kit: BenchKit): Promise<void> {
  const cluster = await startCluster(kit);
  try {
    await measureCatalog(kit, base, cluster);
    await measureDeliveryRounds(kit, base, cluster);
    await measureOurPaced(kit, cluster, await measureGraphilePaced(kit, cluster));
  } finally {
    await cluster.stop();
  }
}
