/**
 * npm run bench [-- --quick] [-- --only delivery|events-listing|delivery-records|metrics|console|postgres|large-pages|backlog|peer|typed|builds|cli]
 *
 * Starts the daemon as built for production (dist/, via bin/platform) on a
 * fresh temp data directory, pinned to core 0 where taskset exists; this
 * harness (load generator and test subscribers) pins itself to core 1. Every
 * throughput is also given as a ratio to a bare h3 route measured in the same
 * run, because absolute figures drift between runs on shared machines.
 * Prints a Markdown table and writes bench/results.json.
 */
import autocannon from 'autocannon';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { atRest, measureBacklog } from './backlog.js';
import { measureHttpPeer } from './http-peer.js';
import { measureLighthouse } from './lighthouse.js';
import type { BenchKit, Load, Row, Started, Subscriber } from './kit.js';
import { measurePostgres } from './postgres.js';
import { benchLogFile } from './log-files.js';

const QUICK = process.argv.includes('--quick');
/** `--only NAME` runs the baseline and that scenario alone (see ONLY_SCENARIOS). */
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'platform');
const ADMIN = { email: 'bench@example.test', password: 'bench-password-1' };
const SECONDS = QUICK ? 3 : 10;
const PUBLISH_SECONDS = QUICK ? 3 : 30;

function hasTaskset(): boolean {
  return spawnSync('taskset', ['--version']).status === 0 && cpus().length >= 2;
}
const PINNED = hasTaskset();
if (PINNED) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });

const rows: Row[] = [];
const benchStarted = performance.now();
const clock = () => `${((performance.now() - benchStarted) / 1000).toFixed(0).padStart(3)} s`;

// ---------- processes ----------


async function startProcess(command: string[], marker: RegExp, env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; logFile: string }> {
  const logFile = benchLogFile('out.log');
  const out = openSync(logFile, 'w');
  const argv = PINNED ? ['taskset', '-c', '0', ...command] : command;
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', out, out], env: { ...process.env, ...env } });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const text = readFileSync(logFile, 'utf8');
    const url = marker.exec(text)?.[1];
    if (url) return { url, child, logFile };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${command.join(' ')} did not start:\n${text}`);
    await sleep(20);
  }
}

/** `bin`: another build's bin/platform (`--only builds`); this clone's by default. */
async function startDaemon(dataDir?: string, extraEnv: Record<string, string> = {}, flags: string[] = [], bin = BIN): Promise<Started> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'platform-bench-'));
  const { url, child } = await startProcess(
    [bin, 'serve', '--port', '0', '--data-dir', dir, ...flags],
    /listening on (http:\/\/\S+)/,
    { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, ...extraEnv },
  );
  return { url, child, dataDir: dir, stop: () => stopChild(child) };
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const rssMb = (pid: number): number => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU time the process has used (all its threads, user and system), in ms. */
const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};

// ---------- the API ----------

async function api(base: string, token: string | null, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(base + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function login(base: string): Promise<string> {
  const response = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith('platform_token='));
  if (!cookie) throw new Error(`login failed: ${response.status}`);
  return cookie.slice('platform_token='.length).split(';', 1)[0]!;
}

/** Runs tasks with at most `width` in flight. */
async function pool<T>(items: T[], width: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

const WORDS = ['invoice', 'ledger', 'calendar', 'weather', 'mailer', 'pipeline', 'tracker', 'survey', 'payroll', 'inventory', 'chat', 'vault', 'report', 'forecast', 'backup', 'deploy', 'translate', 'support', 'analytics', 'crm'];
const CATEGORIES = ['sales', 'billing', 'productivity', 'communication', 'security', 'storage', 'analytics', 'support'];

/** `count` extensions named ext-00000…, with `versions` versions each. */
async function seedCatalog(base: string, token: string, from: number, count: number, versions: number): Promise<void> {
  const keys = Array.from({ length: count }, (_, i) => from + i);
  await pool(keys, 48, async (n) => {
    const key = `ext-${String(n).padStart(5, '0')}`;
    const words = [WORDS[n % WORDS.length], WORDS[(n * 7) % WORDS.length], WORDS[(n * 13) % WORDS.length]];
    await api(base, token, 'POST', '/api/admin/marketplace/extensions', {
      extensionKey: key,
      name: `${words[0]![0]!.toUpperCase()}${words[0]!.slice(1)} ${n}`,
      description: `A ${words[1]} and ${words[2]} extension, number ${n}, for teams that need ${words[0]}.`,
      category: CATEGORIES[n % CATEGORIES.length],
    });
    for (let v = 0; v < versions; v += 1) {
      await api(base, token, 'POST', `/api/admin/marketplace/extensions/${key}/versions`, {
        version: `1.${v}.0`,
        artifactUrl: `https://artifacts.example.test/${key}/${key}-1.${v}.0.jar`,
        requiresPlatform: '0.1.0',
      });
    }
  });
}

// ---------- load ----------


function load(options: autocannon.Options): Promise<Load> {
  return new Promise((resolve, reject) => {
    autocannon(options, (error, result) => {
      if (error) return reject(error);
      const ok = result['2xx'];
      resolve({
        rps: Math.round(result.requests.average),
        p50: result.latency.p50,
        p99: result.latency.p99,
        ok,
        errors: result.errors + result.timeouts + result.non2xx,
      });
    });
  });
}

// ---------- the subscriber ----------


async function startSubscriber(): Promise<Subscriber> {
  const subscriber: Subscriber = { url: '', server: undefined as unknown as Server, received: 0, latencies: [], lastAt: 0 };
  subscriber.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      subscriber.received += 1;
      subscriber.lastAt = performance.now();
      const sentAt = /"sentAt":(\d+)/.exec(Buffer.concat(chunks).toString('latin1'))?.[1];
      if (sentAt) subscriber.latencies.push(Date.now() - Number(sentAt));
      res.statusCode = 204;
      res.end();
    });
  });
  subscriber.server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => subscriber.server.listen(0, '127.0.0.1', resolve));
  subscriber.url = `http://127.0.0.1:${(subscriber.server.address() as { port: number }).port}`;
  return subscriber;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

// ---------- scenarios ----------

async function baseline(): Promise<Load> {
  const { url, child } = await startProcess([process.execPath, join(ROOT, 'bench', 'baseline.mjs')], /baseline listening on (\S+)/);
  try {
    await load({ url: `${url}/baseline`, connections: 50, duration: 1 });
    return await load({ url: `${url}/baseline`, connections: 50, duration: SECONDS });
  } finally {
    await stopChild(child);
  }
}

function record(row: Row): void {
  rows.push(row);
  const ratio = row.ratio === null ? '' : `, ${(row.ratio * 100).toFixed(0)} % of baseline`;
  console.error(`${clock()} ${row.met ? 'met ' : 'MISS'} ${row.scenario}: ${row.value} ${row.unit}${ratio} (target ${row.target})`);
}

async function main(): Promise<void> {
  console.error(`platform bench${QUICK ? ' (quick)' : ''}: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Node ${process.version}${PINNED ? ', daemon on core 0, load on core 1' : ', not pinned (no taskset)'}`);

  const only = ONLY === undefined ? undefined : ONLY_SCENARIOS[ONLY];
  if (ONLY !== undefined && !only) throw new Error(`--only takes one of: ${Object.keys(ONLY_SCENARIOS).join(', ')}`);
  const base = await baseline();
  console.error(`${clock()} baseline: ${base.rps} req/s, p99 ${base.p99} ms`);
  if (only) {
    await only(base);
    return report(base);
  }

  // Catalog: 1,000 extensions of 5 versions for detail reads, 10,000 in all for search and memory.
  const daemon = await startDaemon();
  const token = await login(daemon.url);
  await seedCatalog(daemon.url, token, 0, 1000, 5);
  // --quick leaves the other 9,000 without versions: searching and idling do not need them.
  await seedCatalog(daemon.url, token, 1000, 9000, QUICK ? 0 : 1);

  const detailOptions = { url: `${daemon.url}/api/marketplace/extensions/ext-00042`, connections: 50, duration: SECONDS };
  await load({ ...detailOptions, duration: 1 });
  const detail = await load(detailOptions);
  record({
    scenario: '1. catalog detail GET (1,000 ext. x 5 versions, 50 conn.)',
    value: detail.rps,
    unit: 'req/s',
    p50: detail.p50,
    p99: detail.p99,
    ratio: detail.rps / base.rps,
    rssMb: rssMb(daemon.child.pid!),
    target: '>= 25,000 req/s and >= 60 % of baseline',
    met: detail.rps >= 25_000 && detail.rps / base.rps >= 0.6 && detail.errors === 0,
  });

  const search = await load({ url: `${daemon.url}/api/marketplace/extensions?search=ledger%20payroll&limit=20`, connections: 50, duration: SECONDS });
  record({
    scenario: '2. search over 10,000 extensions, limit 20',
    value: search.rps,
    unit: 'req/s',
    p50: search.p50,
    p99: search.p99,
    ratio: search.rps / base.rps,
    rssMb: rssMb(daemon.child.pid!),
    target: '>= 5,000 req/s',
    met: search.rps >= 5_000 && search.errors === 0,
  });

  const publishTimes: number[] = [];
  for (let n = 0; n < (QUICK ? 100 : 500); n += 1) {
    const started = performance.now();
    await api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions/ext-00007/versions', {
      version: `2.0.${n}`,
      artifactUrl: `https://artifacts.example.test/ext-00007/2.0.${n}.jar`,
    });
    publishTimes.push(performance.now() - started);
  }
  const publishMedian = percentile(publishTimes, 50);
  record({
    scenario: '3. sequential version publishes (10,000 ext. catalog)',
    value: Number(publishMedian.toFixed(2)),
    unit: 'ms median',
    p50: Number(publishMedian.toFixed(2)),
    p99: Number(percentile(publishTimes, 99).toFixed(2)),
    ratio: null,
    rssMb: rssMb(daemon.child.pid!),
    target: '<= 5 ms median',
    met: publishMedian <= 5,
  });

  // Idle: at rest as in group 16 (atRest: 30 s without requests, by when the daemon has given back
  // what scenarios 1-3 grew), before the logins of scenario 7 start password workers.
  const { rss: idleRss, early: idleEarly } = await atRest(() => rssMb(daemon.child.pid!));
  record({
    scenario: '8a. RSS idle with 10,000 extensions',
    value: idleRss,
    unit: 'MB',
    p50: null,
    p99: null,
    ratio: null,
    rssMb: idleRss,
    target: '<= 100 MB',
    met: idleRss <= 100,
    note: `at rest (30 s without requests); ${idleEarly} MB 5 s into the rest`,
  });

  // 7. Logins next to catalog reads: 20 logins per second at bcrypt cost 10.
  let logins = 0;
  let loginFailures = 0;
  const loginTimer = setInterval(() => {
    login(daemon.url).then(
      () => (logins += 1),
      () => (loginFailures += 1),
    );
  }, 50);
  const detailWithLogins = await load(detailOptions);
  clearInterval(loginTimer);
  await sleep(200);
  record({
    scenario: '7. scenario 1 with 20 logins/s running',
    value: detailWithLogins.p99,
    unit: 'ms p99',
    p50: detailWithLogins.p50,
    p99: detailWithLogins.p99,
    ratio: detailWithLogins.rps / base.rps,
    rssMb: rssMb(daemon.child.pid!),
    target: `p99 <= 2x scenario 1's (${detail.p99} ms)`,
    met: detailWithLogins.p99 <= Math.max(2 * detail.p99, 1),
    note: `${logins} logins completed in ${SECONDS} s, ${loginFailures} refused`,
  });

  // 9. CLI start.
  measureCli(daemon, token);
  await daemon.stop();
  rmSync(daemon.dataDir, { recursive: true, force: true });

  await measureDelivery(base);

  // 6. Flat cost: publishing with 1,000,000 events already recorded vs an empty log.
  const recorded = QUICK ? 100_000 : 1_000_000;
  const empty = await measurePublishOnly(null);
  const full = await measurePublishOnly(recorded);
  record({
    scenario: `6. publish throughput with ${recorded.toLocaleString('en')} events recorded`,
    value: full.rps,
    unit: 'events/s',
    p50: full.p50,
    p99: full.p99,
    ratio: full.rps / base.rps,
    rssMb: full.rss,
    target: `>= 90 % of an empty log's (${empty.rps} events/s)`,
    met: full.rps >= 0.9 * empty.rps,
    note: `${((full.rps / empty.rps) * 100).toFixed(0)} % of the empty log's rate`,
  });

  await measureEventListing(base);
  await measureDeliveryRecords(base);
  await measureMetricsCost(base);
  await measureConsole(base);
  await measurePostgresGroup(base);
  await measureLargePages(base);
  await measureBacklogGroup(base);
  await measurePeerGroup(base);
  await measureTypedPublish(base);
  report(base);
}

/** 9: the CLI's start, alone and with one request to `daemon` (10,000 extensions in its catalog). */
function measureCli(daemon: Started, token: string): void {
  const timeCli = (args: string[], env: Record<string, string> = {}) => {
    const times: number[] = [];
    for (let i = 0; i < (QUICK ? 5 : 10); i += 1) {
      const started = performance.now();
      const result = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: 'ignore' });
      if (result.status !== 0) throw new Error(`platform ${args.join(' ')} exited ${result.status}`);
      times.push(performance.now() - started);
    }
    return percentile(times, 50);
  };
  const help = timeCli(['--help']);
  const list = timeCli(['ext', 'list', '--limit', '20'], { PLATFORM_URL: daemon.url, PLATFORM_TOKEN: token, XDG_CONFIG_HOME: '/nonexistent' });
  record({
    scenario: '9a. CLI start: platform --help',
    value: Math.round(help),
    unit: `ms median of ${QUICK ? 5 : 10}`,
    p50: Math.round(help),
    p99: null,
    ratio: null,
    rssMb: null,
    target: '<= 150 ms',
    met: help <= 150,
  });
  record({
    scenario: '9b. CLI: platform ext list against the daemon',
    value: Math.round(list),
    unit: `ms median of ${QUICK ? 5 : 10}`,
    p50: Math.round(list),
    p99: null,
    ratio: null,
    rssMb: null,
    target: '<= 250 ms',
    met: list <= 250,
  });
}

/** `--only cli`: scenario 9 against a daemon seeded as in a full run. */
async function measureCliAlone(): Promise<void> {
  const daemon = await startDaemon();
  try {
    const token = await login(daemon.url);
    await seedCatalog(daemon.url, token, 0, 1000, 5);
    await seedCatalog(daemon.url, token, 1000, 9000, QUICK ? 0 : 1);
    measureCli(daemon, token);
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}

const ONLY_SCENARIOS: Record<string, (base: Load) => Promise<void>> = {
  delivery: measureDelivery,
  'events-listing': measureEventListing,
  'delivery-records': measureDeliveryRecords,
  metrics: measureMetricsCost,
  console: measureConsole,
  postgres: measurePostgresGroup,
  'large-pages': measureLargePages,
  backlog: measureBacklogGroup,
  peer: measurePeerGroup,
  typed: measureTypedPublish,
  builds: measureBuilds,
  cli: measureCliAlone,
};

/** What the groups in files of their own (bench/postgres.ts, bench/backlog.ts) borrow from this one. */
const kit = (): BenchKit => ({ QUICK, SECONDS, PUBLISH_SECONDS, PINNED, startDaemon, startSubscriber, login, api, load, seedCatalog, record, rssMb, cpuMs, percentile, waitUntil });

/** 14: the PostgreSQL backend beside graphile-worker (bench/postgres.ts). */
function measurePostgresGroup(base: Load): Promise<void> {
  return measurePostgres(base, kit());
}

/** 16: a backlog of 1,000,000 pending deliveries, beside BullMQ on Redis (bench/backlog.ts). */
function measureBacklogGroup(base: Load): Promise<void> {
  return measureBacklog(base, kit());
}

/** 17: scenarios 4 and 5 beside an HTTP + BullMQ service doing the same work (bench/http-peer.ts). */
function measurePeerGroup(base: Load): Promise<void> {
  return measureHttpPeer(base, kit());
}

/**
 * 15a and 15b: GET .../events over a log of 1,000,000 events (10 workspaces,
 * segments of 100,000: the newest segment holds 100,000), with one client:
 * the first page, and a page 2,000 events back (past what memory holds).
 */
async function measureEventListing(base: Load): Promise<void> {
  const recorded = QUICK ? 200_000 : 1_000_000;
  let daemon = await startDaemon();
  let token = await login(daemon.url);
  await api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'history-3', name: 'History' });
  await daemon.stop();
  writeEventLog(join(daemon.dataDir, 'events'), recorded);
  daemon = await startDaemon(daemon.dataDir);
  token = await login(daemon.url);
  try {
    const path = '/api/workspaces/history-3/events?limit=50';
    const headers = { authorization: `Bearer ${token}` };
    let cursor: string | undefined;
    for (let page = 0; page < 2; page += 1) {
      cursor = (await api(daemon.url, token, 'GET', `/api/workspaces/history-3/events?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)).meta.nextCursor;
    }
    const measure = async (url: string) => {
      await load({ url, headers, connections: 1, duration: 1 });
      return load({ url, headers, connections: 1, duration: SECONDS });
    };
    const first = await measure(daemon.url + path);
    const deep = await measure(`${daemon.url}${path}&cursor=${cursor}`);
    for (const [name, result] of [['first page', first], ['a page 2,000 events back', deep]] as const) {
      record({
        scenario: `15${name === 'first page' ? 'a' : 'b'}. events listing, ${name}, limit 50, ${recorded.toLocaleString('en')} events (100,000 in the newest segment), 1 conn.`,
        value: result.p99,
        unit: 'ms p99',
        p50: result.p50,
        p99: result.p99,
        ratio: null,
        rssMb: rssMb(daemon.child.pid!),
        target: '<= 20 ms p99',
        met: result.p99 <= 20 && result.errors === 0,
        note: `${result.rps} req/s; bare baseline p99 ${base.p99} ms at 50 conn.`,
      });
    }
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}

/**
 * 17a and 17b: 1,000 events of 200 KB; one member pages through them with
 * limit=1000 (pages bounded by PLATFORM_MAX_PAGE_BYTES, 4 MiB) again and again
 * while another client calls /api/health 50 times a second: the health
 * answers' p99, and the daemon's RSS at its highest over its own RSS at rest
 * before the paging (and, in the note, 5 s after it).
 */
async function measureLargePages(base: Load): Promise<void> {
  const daemon = await startDaemon();
  try {
    const token = await login(daemon.url);
    await api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'large', name: 'Large' });
    const payload = { text: 'p'.repeat(200_000) };
    let published = 0;
    const publisher = async () => {
      while (published < 1000) {
        published += 1;
        await api(daemon.url, token, 'POST', '/api/workspaces/large/events/publish', { eventKey: 'large.item', payload });
      }
    };
    await Promise.all(Array.from({ length: 4 }, publisher));
    await sleep(2_000);
    const restingRss = rssMb(daemon.child.pid!);

    let paging = true;
    let highestRss = restingRss;
    const healthMs: number[] = [];
    let healthErrors = 0;
    const inFlight: Promise<void>[] = [];
    const health = (async () => {
      // Paced, not closed-loop: one call every 20 ms whatever the answers' time.
      for (let next = performance.now(); paging; next += 20) {
        const sent = performance.now();
        inFlight.push(
          fetch(`${daemon.url}/api/health`)
            .then(async (response) => {
              await response.arrayBuffer();
              if (response.status === 200) healthMs.push(performance.now() - sent);
              else healthErrors += 1;
            })
            .catch(() => void (healthErrors += 1)),
        );
        highestRss = Math.max(highestRss, rssMb(daemon.child.pid!));
        await sleep(Math.max(0, next + 20 - performance.now()));
      }
    })();
    let pages = 0;
    let largest = 0;
    const until = performance.now() + SECONDS * 1000;
    while (performance.now() < until) {
      let cursor: string | undefined;
      do {
        const response = await fetch(`${daemon.url}/api/workspaces/large/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const text = await response.text();
        largest = Math.max(largest, Buffer.byteLength(text));
        // Only the envelope's tail is parsed: parsing megabytes here would delay this process's own health calls.
        cursor = (JSON.parse(`{${text.slice(text.lastIndexOf('"meta":'))}`) as { meta: { nextCursor?: string } }).meta.nextCursor;
        pages += 1;
      } while (cursor !== undefined);
    }
    paging = false;
    await health;
    await Promise.all(inFlight);
    const p99 = percentile(healthMs, 99);
    await sleep(5_000);
    const laterRss = rssMb(daemon.child.pid!);
    record({
      scenario: '17a. /api/health at 50 req/s while a member pages through 1,000 events of 200 KB (limit 1000)',
      value: Math.round(p99 * 10) / 10,
      unit: 'ms p99',
      p50: Math.round(percentile(healthMs, 50) * 10) / 10,
      p99: Math.round(p99 * 10) / 10,
      ratio: null,
      rssMb: highestRss,
      target: '<= 50 ms p99',
      met: p99 <= 50 && healthErrors === 0,
      note: `${healthMs.length} health answers, ${healthErrors} errors; ${pages} pages read, the largest ${(largest / 1024 / 1024).toFixed(2)} MiB; bare baseline p99 ${base.p99} ms at 50 conn.`,
    });
    record({
      scenario: '17b. daemon RSS while paging through 1,000 events of 200 KB, over its RSS at rest',
      value: highestRss - restingRss,
      unit: 'MB more',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: highestRss,
      target: `<= 50 MB more than at rest (${restingRss} MB)`,
      met: highestRss - restingRss <= 50,
      note: `5 s after the paging stopped: ${laterRss} MB`,
    });
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}

/** CPU time (user + system) a process has used, in seconds: Linux only. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * 12a and 12b: what metrics and access lines cost scenario 1. The same catalog
 * detail GET against three daemons: one as deployed, one that counts nothing
 * (PLATFORM_BENCH_METRICS=off) and one with `--quiet` (no access lines). Each
 * of six rounds starts three fresh daemons and measures them in an order that
 * alternates, so that neither drift in the machine's load nor one process's
 * luck (its memory layout, what the JIT made of it) falls on one of them only.
 * Besides throughput, each daemon's CPU time per request: on a shared machine,
 * other work takes the daemon's core away and moves throughput, while the CPU a
 * request costs moves less.
 */
interface DaemonVariant {
  env: Record<string, string>;
  flags: string[];
  /** Another build's bin/platform; this clone's when absent. */
  bin?: string;
}

/**
 * Scenario 1's request against daemons that differ in one thing, started
 * afresh each round and measured in alternating order, so that drift in the
 * machine's load falls on all alike: each one's mean rate, and its CPU time
 * per request, which that drift moves much less.
 */
async function scenarioOneRounds<Name extends string>(variants: Record<Name, DaemonVariant>, rounds: number): Promise<Record<Name, { rps: number; microsPerRequest: number }>> {
  const names = Object.keys(variants) as Name[];
  const totals = Object.fromEntries(names.map((name) => [name, { rps: 0, requests: 0, cpu: 0 }])) as Record<Name, { rps: number; requests: number; cpu: number }>;
  const path = '/api/marketplace/extensions/ext-00042';
  for (let round = 0; round < rounds; round += 1) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    const daemons = new Map<Name, Started>();
    try {
      for (const name of order) daemons.set(name, await startDaemon(undefined, variants[name].env, variants[name].flags, variants[name].bin));
      for (const daemon of daemons.values()) await seedCatalog(daemon.url, await login(daemon.url), 0, 100, 5);
      for (const name of order) {
        const daemon = daemons.get(name)!;
        await load({ url: daemon.url + path, connections: 50, duration: 1 });
        const cpuBefore = cpuSeconds(daemon.child.pid!);
        const result = await load({ url: daemon.url + path, connections: 50, duration: SECONDS });
        totals[name].cpu += cpuSeconds(daemon.child.pid!) - cpuBefore;
        totals[name].rps += result.rps;
        totals[name].requests += result.ok + result.errors;
      }
    } finally {
      for (const daemon of daemons.values()) {
        await daemon.stop();
        rmSync(daemon.dataDir, { recursive: true, force: true });
      }
    }
  }
  return Object.fromEntries(
    names.map((name) => [name, { rps: Math.round(totals[name].rps / rounds), microsPerRequest: (totals[name].cpu * 1e6) / totals[name].requests }]),
  ) as Record<Name, { rps: number; microsPerRequest: number }>;
}

async function measureMetricsCost(base: Load): Promise<void> {
  // Even, so that each variant is measured as often first as last.
  const rounds = 6;
  const measured = await scenarioOneRounds(
    {
      full: { env: {}, flags: [] },
      uncounted: { env: { PLATFORM_BENCH_METRICS: 'off' }, flags: [] },
      quiet: { env: {}, flags: ['--quiet'] },
    },
    rounds,
  );
  type Variant = keyof typeof measured;
  const rps = (name: Variant) => measured[name].rps;
  const microsPerRequest = (name: Variant) => measured[name].microsPerRequest;
  const compare = (scenario: string, other: Variant, without: string, target: number | null) => {
    const ratio = rps('full') / rps(other);
    record({
      scenario,
      value: rps('full'),
      unit: `req/s (${without}: ${rps(other)} req/s, ${(ratio * 100).toFixed(1)} %)`,
      p50: null,
      p99: null,
      ratio: rps('full') / base.rps,
      rssMb: null,
      target: target === null ? 'none (what they cost)' : `>= ${target * 100} % of the rate ${without}`,
      met: target === null || ratio >= target,
      note: `CPU per request ${microsPerRequest('full').toFixed(1)} us, ${without} ${microsPerRequest(other).toFixed(1)} us (${((microsPerRequest('full') / microsPerRequest(other) - 1) * 100).toFixed(1)} % more)`,
    });
  };
  compare(`12a. metrics: scenario 1 counting vs not (${rounds} rounds)`, 'uncounted', 'not counting', 0.97);
  compare(`12b. access lines: scenario 1 logging vs --quiet (${rounds} rounds)`, 'quiet', 'without access lines', null);
}

/**
 * `--only builds --builds NAME=ROOT,NAME=ROOT`: scenario 1's request and
 * scenario 4's delivered event against the daemons of several builds (each
 * ROOT a built clone or worktree, `.` this one), to find which change moved
 * their cost; what the machine's drift does to absolute figures falls on all
 * alike. Their CPU per request and per delivered event are the figures to read.
 */
async function measureBuilds(base: Load): Promise<void> {
  const argument = process.argv.includes('--builds') ? process.argv[process.argv.indexOf('--builds') + 1] : undefined;
  if (!argument) throw new Error('--only builds takes --builds NAME=ROOT,NAME=ROOT (each ROOT a built clone or worktree)');
  const variants = Object.fromEntries(
    argument.split(',').map((pair) => {
      const [name, root] = pair.split('=');
      if (!name || !root) throw new Error(`--builds: ${pair} is not NAME=ROOT`);
      return [name, { env: {}, flags: [], bin: join(resolve(root), 'bin', 'platform') }];
    }),
  ) as Record<string, DaemonVariant>;
  const rounds = QUICK ? 2 : 4;
  const measured = await scenarioOneRounds(variants, rounds);
  for (const [name, { rps, microsPerRequest }] of Object.entries(measured)) {
    record({
      scenario: `builds. scenario 1 on ${name} (${rounds} rounds, alternated)`,
      value: Number(microsPerRequest.toFixed(1)),
      unit: `us of CPU per request (${rps} req/s)`,
      p50: null,
      p99: null,
      ratio: rps / base.rps,
      rssMb: null,
      target: 'none (a comparison)',
      met: true,
    });
  }
  const perEvent = Object.fromEntries(Object.keys(variants).map((name) => [name, { cpuMs: 0, delivered: 0, seconds: 0 }]));
  for (let round = 0; round < rounds; round += 1) {
    const names = Object.keys(variants);
    for (const name of round % 2 === 0 ? names : names.reverse()) {
      const rig = await startDeliveryRig({}, variants[name]!.bin);
      try {
        const { cpuMs: used, delivered, elapsed } = await publishRound(rig, SECONDS);
        perEvent[name]!.cpuMs += used;
        perEvent[name]!.delivered += delivered;
        perEvent[name]!.seconds += elapsed;
      } finally {
        await stopDeliveryRig(rig);
      }
    }
  }
  for (const [name, { cpuMs: used, delivered, seconds }] of Object.entries(perEvent)) {
    record({
      scenario: `builds. scenario 4 on ${name} (${rounds} rounds, alternated)`,
      value: Number(((used * 1000) / delivered).toFixed(1)),
      unit: `us of CPU per delivered event (${Math.round(delivered / seconds)} delivered/s)`,
      p50: null,
      p99: null,
      ratio: null,
      rssMb: null,
      target: 'none (a comparison)',
      met: true,
    });
  }
}

/** A JSON Schema of 20 properties of the usual kinds, and a payload of about 1 KB that matches it. */
function typedEvent(): { schema: Record<string, unknown>; payload: Record<string, unknown> } {
  const properties: Record<string, unknown> = {};
  const payload: Record<string, unknown> = {};
  for (let i = 0; i < 20; i += 1) {
    const name = `field${String(i).padStart(2, '0')}`;
    if (i % 4 === 0) {
      properties[name] = { type: 'number', minimum: 0 };
      payload[name] = 1000 + i;
    } else if (i % 4 === 1) {
      properties[name] = { type: 'string', format: 'date-time' };
      payload[name] = new Date(Date.UTC(2026, 0, 1 + i)).toISOString();
    } else if (i % 4 === 2) {
      properties[name] = { enum: ['open', 'won', 'lost'] };
      payload[name] = 'won';
    } else {
      properties[name] = { type: 'string', maxLength: 200 };
      payload[name] = `text of field ${i} `.repeat(8).slice(0, 100);
    }
  }
  return { schema: { type: 'object', required: Object.keys(properties), properties, additionalProperties: false }, payload };
}

/**
 * 18: what validating a typed payload costs a publish. One daemon, two event
 * keys with the same 1 KB payload: `bench.typed` has a manifest schema of 20
 * properties, `bench.untyped` has none. Six alternating rounds each; the
 * daemon's CPU time per acknowledged publish (no subscribers, so the
 * validation's share is the largest it can be).
 */
async function measureTypedPublish(base: Load): Promise<void> {
  const daemon = await startDaemon();
  try {
    const token = await login(daemon.url);
    const { schema, payload } = typedEvent();
    await api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions', { extensionKey: 'bench', name: 'Bench' });
    await api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions/bench/versions', {
      version: '1.0.0',
      artifactUrl: 'https://artifacts.example.test/bench.jar',
      manifest: { manifestVersion: 1, extensionKey: 'bench', version: '1.0.0', publishes: [{ eventKey: 'bench.typed', schemaVersion: '1', schema }] },
    });
    await api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'typed', name: 'Typed' });
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    const options = (eventKey: string, duration: number): autocannon.Options => ({
      url: `${daemon.url}/api/workspaces/typed/events/publish`,
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ eventKey, payload }),
      connections: 50,
      duration,
    });
    const variants = ['bench.typed', 'bench.untyped'] as const;
    const totals = { 'bench.typed': { cpu: 0, ok: 0, rps: 0 }, 'bench.untyped': { cpu: 0, ok: 0, rps: 0 } };
    const rounds = 6;
    const seconds = QUICK ? 2 : 5;
    for (const eventKey of variants) await load(options(eventKey, 1));
    for (let round = 0; round < rounds; round += 1) {
      for (const eventKey of round % 2 === 0 ? variants : [...variants].reverse()) {
        const cpuBefore = cpuSeconds(daemon.child.pid!);
        const result = await load(options(eventKey, seconds));
        totals[eventKey].cpu += cpuSeconds(daemon.child.pid!) - cpuBefore;
        totals[eventKey].ok += result.ok;
        totals[eventKey].rps += result.rps;
      }
    }
    const micros = (eventKey: (typeof variants)[number]) => (totals[eventKey].cpu * 1e6) / totals[eventKey].ok;
    const more = micros('bench.typed') / micros('bench.untyped') - 1;
    const rate = Math.round(totals['bench.typed'].rps / rounds);
    record({
      scenario: `18. publish with a typed payload (20-property schema, ${bytes} B) vs untyped (${rounds} rounds)`,
      value: Math.round(more * 1000) / 10,
      unit: '% more CPU per event',
      p50: null,
      p99: null,
      ratio: rate / base.rps,
      rssMb: rssMb(daemon.child.pid!),
      target: '<= 10 % more CPU per event',
      met: more <= 0.1,
      note: `CPU per publish ${micros('bench.typed').toFixed(1)} us typed, ${micros('bench.untyped').toFixed(1)} us untyped; ${rate} vs ${Math.round(totals['bench.untyped'].rps / rounds)} publishes/s`,
    });
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}

const RECORDED_DELIVERIES = 1_000_000;

/**
 * 11a and 11b: a filtered deliveries listing over 1,000,000 records, and RSS
 * with them vs with none. The records are written straight into
 * deliveries.log in the journal's own format (completed, so that start-up
 * reconciles nothing), then the daemon is restarted on it.
 */
async function measureDeliveryRecords(base: Load): Promise<void> {
  const measure = async (count: number) => {
    let daemon = await startDaemon();
    let token = await login(daemon.url);
    await api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'bench', name: 'Bench' });
    await daemon.stop();
    writeDeliveryJournal(join(daemon.dataDir, 'deliveries.log'), count);
    daemon = await startDaemon(daemon.dataDir);
    token = await login(daemon.url);
    // Held data, not the garbage of the start's replay nor of the listing load (whose rate differs
    // between the two): RSS at rest as in 8a and group 16, before the load; its 5-s reading in the note.
    const { rss: restingRss, early: earlyRss } = await atRest(() => rssMb(daemon.child.pid!));
    // One subscription in ten and one record in 97 DEAD: a page of 20 scans about 20,000 records.
    const options = {
      url: `${daemon.url}/api/workspaces/bench/deliveries?subscriptionId=sub-03&status=DEAD&limit=20`,
      headers: { authorization: `Bearer ${token}` },
      // One client at a time: the target is the listing's answer time, not a queue behind other listings.
      connections: 1,
    };
    await load({ ...options, duration: 1 });
    const result = await load({ ...options, duration: SECONDS });
    const rss = rssMb(daemon.child.pid!);
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
    return { ...result, rss, restingRss, earlyRss };
  };
  const none = await measure(0);
  const full = await measure(RECORDED_DELIVERIES);
  record({
    scenario: `11a. filtered deliveries listing over ${RECORDED_DELIVERIES.toLocaleString('en')} records, 1 conn.`,
    value: full.p99,
    unit: 'ms p99',
    p50: full.p50,
    p99: full.p99,
    ratio: null,
    rssMb: full.rss,
    target: '<= 20 ms p99',
    met: full.p99 <= 20,
    note: `${full.rps} req/s; with no records: ${none.rps} req/s, p99 ${none.p99} ms; bare baseline p99 ${base.p99} ms at 50 conn.`,
  });
  record({
    scenario: `11b. RSS at rest with ${RECORDED_DELIVERIES.toLocaleString('en')} delivery records vs none`,
    value: full.restingRss - none.restingRss,
    unit: 'MB more',
    p50: null,
    p99: null,
    ratio: null,
    rssMb: full.restingRss,
    target: `<= 50 MB more than with none (${none.restingRss} MB)`,
    met: full.restingRss - none.restingRss <= 50,
    note: `at rest (30 s without requests); 5 s into the rest ${full.earlyRss} vs ${none.earlyRss} MB; after the listing load ${full.rss} vs ${none.rss} MB`,
  });
}

/** `count` completed delivery records of workspace `bench`, as `new` entries of deliveries.log, oldest first. */
function writeDeliveryJournal(file: string, count: number): void {
  const now = Date.now();
  const fd = openSync(file, 'w');
  const chunk: string[] = [];
  for (let n = 0; n < count; n += 1) {
    const createdAt = new Date(now - (count - n) * 10).toISOString();
    const dead = n % 97 === 0;
    chunk.push(
      JSON.stringify({
        t: 'new',
        seq: n + 1,
        record: {
          id: `msg_00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
          eventId: `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`,
          eventKey: `bench.kind${n % 5}`,
          workspaceId: 'bench',
          subscriptionId: `sub-${String(n % 10).padStart(2, '0')}`,
          extensionKey: `ext-${n % 10}`,
          kind: 'EXTERNAL_SERVICE',
          status: dead ? 'DEAD' : 'SUCCEEDED',
          attempts: [
            dead
              ? { number: 1, startedAt: createdAt, durationMs: 12, outcome: 'FAILED', httpStatus: 500, error: 'HTTP 500', responseExcerpt: 'internal error' }
              : { number: 1, startedAt: createdAt, durationMs: 3, outcome: 'SUCCESS', httpStatus: 204 },
          ],
          createdAt,
          completedAt: createdAt,
        },
      }),
    );
    if (chunk.length === 10_000 || n === count - 1) {
      writeSync(fd, chunk.join('\n') + '\n');
      chunk.length = 0;
    }
  }
  closeSync(fd);
}

/** A daemon with one workspace whose `bench.tick` events go to one external subscriber. */
interface DeliveryRig {
  daemon: Started;
  token: string;
  subscriber: Subscriber;
  publishOptions: autocannon.Options;
}

async function startDeliveryRig(env: Record<string, string>, bin = BIN): Promise<DeliveryRig> {
  const daemon = await startDaemon(undefined, env, [], bin);
  const token = await login(daemon.url);
  const subscriber = await startSubscriber();
  await api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions', { extensionKey: 'sink', name: 'Sink' });
  await api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions/sink/versions', { version: '1.0.0', artifactUrl: 'https://x.test/sink.jar' });
  await api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'bench', name: 'Bench' });
  await api(daemon.url, token, 'POST', '/api/workspaces/bench/extensions', { extensionKey: 'sink' });
  await api(daemon.url, token, 'POST', '/api/workspaces/bench/subscriptions', {
    eventKey: 'bench.tick',
    extensionKey: 'sink',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: subscriber.url,
  });
  const publishOptions = {
    url: `${daemon.url}/api/workspaces/bench/events/publish`,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ eventKey: 'bench.tick', payload: { dealId: 'D-1', amount: 1200, currency: 'EUR' } }),
    connections: 50,
  };
  await load({ ...publishOptions, duration: 1 });
  await waitUntil(() => false, 500);
  return { daemon, token, subscriber, publishOptions };
}

async function stopDeliveryRig(rig: DeliveryRig): Promise<void> {
  await rig.daemon.stop();
  rig.subscriber.server.close();
  rig.subscriber.server.closeAllConnections();
  rmSync(rig.daemon.dataDir, { recursive: true, force: true });
}

/** Publishes at full speed for `seconds` and waits until every acknowledged event is delivered. */
async function publishRound(rig: DeliveryRig, seconds: number) {
  const before = rig.subscriber.received;
  let peakRss = 0;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rssMb(rig.daemon.child.pid!))), 250);
  const cpuBefore = cpuMs(rig.daemon.child.pid!);
  const started = performance.now();
  const published = await load({ ...rig.publishOptions, duration: seconds });
  const drained = await waitUntil(() => rig.subscriber.received - before >= published.ok, 60_000);
  const elapsed = ((drained ? rig.subscriber.lastAt : performance.now()) - started) / 1000;
  clearInterval(rssTimer);
  return { published, delivered: rig.subscriber.received - before, elapsed, drained, peakRss, cpuMs: cpuMs(rig.daemon.child.pid!) - cpuBefore };
}

/** Publishes 2,000 events/s for `seconds`; returns each event's publish-to-delivery latency. */
async function pacedRound(rig: DeliveryRig, seconds: number): Promise<number[]> {
  rig.subscriber.latencies.length = 0;
  const before = rig.subscriber.received;
  const paced = await load({
    ...rig.publishOptions,
    connections: 20,
    duration: seconds,
    overallRate: 2000,
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ eventKey: 'bench.tick', payload: { sentAt: Date.now(), dealId: 'D-2' } }),
        }),
      },
    ],
  });
  await waitUntil(() => rig.subscriber.received - before >= paced.ok, 30_000);
  return [...rig.subscriber.latencies];
}

/** `count` clients of the workspace's live stream that read and count what they get. */
function openStreams(rig: DeliveryRig, count: number): { items: () => number; close: () => void } {
  let items = 0;
  const requests = Array.from({ length: count }, () =>
    request(`${rig.daemon.url}/api/workspaces/bench/stream`, { headers: { authorization: `Bearer ${rig.token}` } }, (response) => {
      response.on('data', (chunk: Buffer) => {
        for (let at = chunk.indexOf('\nevent: '); at !== -1; at = chunk.indexOf('\nevent: ', at + 1)) items += 1;
      });
    }).end(),
  );
  return { items: () => items, close: () => requests.forEach((stream) => stream.destroy()) };
}

/**
 * Scenarios 4, 5 and 8b (events to one external subscriber, every
 * acknowledgement after fsync), and 10: what recording deliveries costs, and
 * what 10 live streams cost. Two daemons run side by side, one started with
 * PLATFORM_BENCH_DELIVERY_RECORDS=off, and take turns in three rounds of each
 * measurement, so that drift in the shared machine's load falls on both alike.
 */
async function measureDelivery(base: Load): Promise<void> {
  const recording = await startDeliveryRig({});
  const bare = await startDeliveryRig({ PLATFORM_BENCH_DELIVERY_RECORDS: 'off' });
  const rigs = [recording, bare];
  const ROUNDS = 3;
  const roundSeconds = PUBLISH_SECONDS / ROUNDS;
  const pacedSeconds = QUICK ? 3 : 5;
  try {
    const throughput = rigs.map(() => ({ ok: 0, errors: 0, rps: 0, p50: 0, p99: 0, delivered: 0, elapsed: 0, drained: true, peakRss: 0, cpuMs: 0 }));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [index, rig] of rigs.entries()) {
        const result = await publishRound(rig, roundSeconds);
        const total = throughput[index]!;
        total.ok += result.published.ok;
        total.errors += result.published.errors;
        total.rps += result.published.rps / ROUNDS;
        total.p50 = Math.max(total.p50, result.published.p50);
        total.p99 = Math.max(total.p99, result.published.p99);
        total.delivered += result.delivered;
        total.elapsed += result.elapsed;
        total.drained &&= result.drained;
        total.peakRss = Math.max(total.peakRss, result.peakRss);
        total.cpuMs += result.cpuMs;
      }
    }
    const [withRecords, withoutRecords] = throughput.map((total) => ({
      ...total,
      rate: Math.round(total.delivered / total.elapsed),
      // Less sensitive to the shared machine's load than the rate: what the daemon spent per event.
      cpuPerEvent: Math.round((total.cpuMs * 1000) / total.delivered),
    }));
    record({
      scenario: `4. publish + deliver to 1 subscriber, ${ROUNDS} x ${roundSeconds} s, 50 conn.`,
      value: withRecords!.rate,
      unit: 'events/s',
      p50: withRecords!.p50,
      p99: withRecords!.p99,
      ratio: withRecords!.rps / base.rps,
      rssMb: withRecords!.peakRss,
      target: '>= 7,000 events/s published and delivered, none lost',
      met: withRecords!.rate >= 7_000 && withRecords!.drained && withRecords!.errors === 0,
      note: `${withRecords!.ok} acknowledged, ${withRecords!.delivered} delivered${withRecords!.drained ? '' : ' (NOT all delivered within 60 s)'}; published at ${Math.round(withRecords!.rps)}/s; p50 and p99 of publishing: the worst round's`,
    });
    record({
      scenario: '8b. RSS during scenario 4 (peak)',
      value: withRecords!.peakRss,
      unit: 'MB',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: withRecords!.peakRss,
      target: '<= 200 MB',
      met: withRecords!.peakRss <= 200,
    });
    const share = withRecords!.rate / withoutRecords!.rate;
    record({
      scenario: '10a. delivery recording: scenario 4 with records vs without (alternated rounds)',
      value: Math.round(share * 100),
      unit: '%',
      p50: null,
      p99: null,
      ratio: null,
      rssMb: null,
      target: '>= 90 % of the rate without records',
      met: share >= 0.9,
      note: `${withRecords!.rate} vs ${withoutRecords!.rate} events/s delivered; daemon CPU per event ${withRecords!.cpuPerEvent} vs ${withoutRecords!.cpuPerEvent} µs; without records ${withoutRecords!.ok} acknowledged, ${withoutRecords!.delivered} delivered`,
    });

    const latencies: number[][] = rigs.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [index, rig] of rigs.entries()) latencies[index]!.push(...(await pacedRound(rig, pacedSeconds)));
    }
    const [pacedWith, pacedWithout] = latencies.map((values) => ({ p50: percentile(values, 50), p99: percentile(values, 99), count: values.length }));
    record({
      scenario: `5. paced 2,000 events/s: publish-to-delivery latency, ${ROUNDS} x ${pacedSeconds} s`,
      value: pacedWith!.p99,
      unit: 'ms p99',
      p50: pacedWith!.p50,
      p99: pacedWith!.p99,
      ratio: null,
      rssMb: rssMb(recording.daemon.child.pid!),
      target: '<= 25 ms p99',
      met: pacedWith!.p99 <= 25,
      note: `${pacedWith!.count} deliveries timed`,
    });
    record({
      scenario: '10b. delivery recording: scenario 5 p99 with records vs without (alternated rounds)',
      value: pacedWith!.p99,
      unit: 'ms p99',
      p50: pacedWith!.p50,
      p99: pacedWith!.p99,
      ratio: null,
      rssMb: null,
      target: `<= 110 % of the p99 without records (${pacedWithout!.p99} ms, p50 ${pacedWithout!.p50} ms)`,
      met: pacedWith!.p99 <= 1.1 * pacedWithout!.p99,
    });

    // 10c: scenario 5 on the recording daemon while 10 live streams follow the workspace.
    const streams = openStreams(recording, 10);
    await sleep(500);
    const streamed: number[] = [];
    const itemsBefore = streams.items();
    for (let round = 0; round < ROUNDS; round += 1) streamed.push(...(await pacedRound(recording, pacedSeconds)));
    await sleep(500);
    const itemsSeen = streams.items() - itemsBefore;
    streams.close();
    const streamedP99 = percentile(streamed, 99);
    record({
      scenario: '10c. scenario 5 with 10 live-stream clients of the workspace',
      value: streamedP99,
      unit: 'ms p99',
      p50: percentile(streamed, 50),
      p99: streamedP99,
      ratio: null,
      rssMb: rssMb(recording.daemon.child.pid!),
      target: `<= 25 ms p99 (scenario 5 without streams: ${pacedWith!.p99} ms)`,
      met: streamedP99 <= 25,
      note: `${streamed.length} deliveries timed; the 10 streams got ${itemsSeen} items (2 per event each: published, delivered)`,
    });
  } finally {
    for (const rig of rigs) await stopDeliveryRig(rig);
  }
}

/** Publish-only throughput (no subscribers), on an empty log or one holding `preload` events. */
async function measurePublishOnly(preload: number | null): Promise<Load & { rss: number }> {
  let daemon = await startDaemon();
  let token = await login(daemon.url);
  await api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'bench', name: 'Bench' });
  if (preload !== null) {
    await daemon.stop();
    writeEventLog(join(daemon.dataDir, 'events'), preload);
    daemon = await startDaemon(daemon.dataDir);
    token = await login(daemon.url);
  }
  const options = {
    url: `${daemon.url}/api/workspaces/bench/events/publish`,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ eventKey: 'bench.tick', payload: { dealId: 'D-1', amount: 1200 } }),
    connections: 50,
  };
  await load({ ...options, duration: 1 });
  const result = await load({ ...options, duration: SECONDS });
  const rss = rssMb(daemon.child.pid!);
  await daemon.stop();
  rmSync(daemon.dataDir, { recursive: true, force: true });
  return { ...result, rss };
}

/** Writes `count` recent events over ten workspaces as full segments, the way the daemon would. */
function writeEventLog(dir: string, count: number): void {
  for (const name of ['segment-000001.log']) {
    try {
      unlinkSync(join(dir, name));
    } catch {
      // not there
    }
  }
  const perSegment = 100_000;
  const now = Date.now();
  for (let segment = 0; segment * perSegment < count; segment += 1) {
    const lines: string[] = [];
    for (let i = 0; i < perSegment && segment * perSegment + i < count; i += 1) {
      const n = segment * perSegment + i;
      lines.push(
        JSON.stringify({
          id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
          eventKey: 'history.recorded',
          tenantId: `history-${n % 10}`,
          actor: 'bench',
          payload: { n, note: 'an event recorded before the measurement' },
          schemaVersion: null,
          occurredAt: new Date(now - (count - n) * 10).toISOString(),
        }),
      );
    }
    const file = join(dir, `segment-${String(segment + 1).padStart(6, '0')}.log`);
    writeFileSync(`${file}.tmp`, lines.join('\n') + '\n');
    renameSync(`${file}.tmp`, file);
  }
}

function report(base: Load): void {
  const format = (value: number | null, digits = 0) => (value === null || Number.isNaN(value) ? '' : value.toLocaleString('en', { maximumFractionDigits: digits }));
  const lines = [
    `| scenario | result | p50 ms | p99 ms | vs baseline | RSS MB | target | met |`,
    `|---|---|---|---|---|---|---|---|`,
    `| 0. bare h3 route (baseline) | ${format(base.rps)} req/s | ${base.p50} | ${base.p99} | 100 % | | | |`,
    ...rows.map(
      (row) =>
        `| ${row.scenario} | ${format(row.value, 2)} ${row.unit} | ${format(row.p50, 2)} | ${format(row.p99, 2)} | ${row.ratio === null ? '' : `${(row.ratio * 100).toFixed(0)} %`} | ${format(row.rssMb)} | ${row.target} | ${row.met ? 'yes' : '**no**'} |`,
    ),
  ];
  console.log(lines.join('\n'));
  for (const row of rows) if (row.note) console.log(`- ${row.scenario}: ${row.note}`);
  const results = {
    date: new Date().toISOString(),
    quick: QUICK,
    machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version, pinned: PINNED },
    baseline: base,
    scenarios: rows,
  };
  writeFileSync(join(ROOT, 'bench', 'results.json'), JSON.stringify(results, null, 2) + '\n');
}

/**
 * 13: the web console in Chromium. (a) How long the marketplace, the first
 * page a signed-in user opens, takes to be interactive (its first card's link
 * rendered by the running app) with a 10,000-extension catalog, from a cold
 * cache, beside the same page on an empty catalog in the same run. (b) The
 * built JavaScript and CSS, gzipped: all of it, and what that first page loads.
 */
async function measureConsole(_base: Load): Promise<void> {
  const CHROMIUM = '/usr/bin/chromium';
  const assets = join(ROOT, 'dist', 'console', 'assets');
  if (!existsSync(CHROMIUM) || !existsSync(assets)) {
    console.error(`${clock()} skipped 13 (console): needs ${CHROMIUM} and a built console (dist/console)`);
    return;
  }
  const gzipped = (file: string) => gzipSync(readFileSync(join(assets, file)), { level: 9 }).length;
  const built = readdirSync(assets).filter((file) => /\.(js|css)$/.test(file));
  const totalKb = built.reduce((sum, file) => sum + gzipped(file), 0) / 1024;

  const { chromium } = await import('playwright-core');
  // A browser is not confined to the load generator's core: Chromium (its processes inherit this
  // affinity when they start) may use both cores, the daemon's included, as on a user's machine.
  if (PINNED) execFileSync('taskset', ['-cp', '0,1', String(process.pid)], { stdio: 'ignore' });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  if (PINNED) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const runs = QUICK ? 5 : 10;
  /** Median time to interactive over `runs` cold loads, and the assets the page fetched. */
  const timeMarketplace = async (url: string) => {
    const times: number[] = [];
    const fetched = new Set<string>();
    for (let run = 0; run < runs; run += 1) {
      // A new context each time: empty cache, as on a first visit; the session comes from a real sign-in.
      const context = await browser.newContext({ baseURL: url });
      const signedIn = await context.request.post('/api/auth/login', { data: ADMIN });
      if (!signedIn.ok()) throw new Error(`console sign-in failed: ${signedIn.status()}`);
      const page = await context.newPage();
      page.on('response', (response) => {
        const path = new URL(response.url()).pathname;
        if (path.startsWith('/assets/')) fetched.add(path.slice('/assets/'.length));
      });
      await page.goto('/marketplace', { waitUntil: 'commit' });
      // performance.now() counts from the start of the navigation.
      // A function, not a string: the console's CSP allows no eval. It runs in the page, whose `document` Node's types do not know.
      const ready = await page.waitForFunction(
        () => (globalThis as unknown as { document: { querySelector(selector: string): unknown } }).document.querySelector('ul.cards li a') && performance.now(),
        undefined,
        { polling: 'raf' },
      );
      times.push(Number(await ready.jsonValue()));
      await context.close();
    }
    return { median: percentile(times, 50), max: Math.max(...times), fetched };
  };

  try {
    const full = await startDaemon();
    const empty = await startDaemon();
    try {
      await seedCatalog(full.url, await login(full.url), 0, 10_000, 0);
      // One extension, so that the empty catalog's page also has a card to wait for.
      await seedCatalog(empty.url, await login(empty.url), 0, 1, 0);
      const bare = await timeMarketplace(empty.url);
      const catalog = await timeMarketplace(full.url);
      const firstLoadKb = [...catalog.fetched].filter((file) => /\.(js|css)$/.test(file)).reduce((sum, file) => sum + gzipped(file), 0) / 1024;
      record({
        scenario: '13a. console: marketplace interactive, 10,000 ext., cold cache (Chromium)',
        value: Math.round(catalog.median),
        unit: `ms median of ${runs}`,
        p50: Math.round(catalog.median),
        p99: null,
        ratio: null,
        rssMb: rssMb(full.child.pid!),
        target: '<= 1,000 ms',
        met: catalog.median <= 1000,
        note: `slowest ${Math.round(catalog.max)} ms; ${Math.round(bare.median)} ms median with a 1-extension catalog in the same run`,
      });
      record({
        scenario: '13b. console: JS + CSS, gzipped',
        value: Number(totalKb.toFixed(1)),
        unit: 'KB',
        p50: null,
        p99: null,
        ratio: null,
        rssMb: null,
        target: '<= 150 KB',
        met: totalKb <= 150,
        note: `the marketplace's first load fetches ${firstLoadKb.toFixed(1)} KB of it`,
      });
    } finally {
      await full.stop();
      await empty.stop();
      for (const daemon of [full, empty]) rmSync(daemon.dataDir, { recursive: true, force: true });
    }
  } finally {
    await browser.close();
  }
  await measureLighthouse(kit());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
