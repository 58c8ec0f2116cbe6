/**
 * npm run soak [-- --minutes N]
 *
 * Runs the built daemon (bin/platform) on a fresh data directory under mixed
 * traffic at a steady rate for N minutes (default 10): event publishes to two
 * subscribers, catalog browsing and search, catalog writes, logins, and a
 * flaky subscriber whose dead letters are replayed now and then. Every 10 s
 * it prints the daemon's RSS and open file descriptors. At the end it prints
 * a summary and a verdict, and exits 1 unless memory and descriptors are flat,
 * every acknowledged event was delivered, and no request failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/platform', import.meta.url));
const ADMIN = { email: 'soak@example.test', password: 'soak-password-1' };
const SAMPLE_EVERY_MS = 10_000;
const WORKSPACE = 'soak';
const HOOKS = 'soak-hooks';
const STEADY_KEY = 'soak.tick';
const FLAKY_KEY = 'soak.flaky';
/** The flaky subscriber answers 500 for this long, then 200 for as long, and so on. */
const FLAKY_PHASE_MS = 20_000;
/**
 * Flat: the last third's mean RSS at most this much above the middle third's,
 * and, with the load stopped, at most this many more open descriptors than at
 * rest before it. Under load the count follows the connections open at that
 * moment (keep-alive pools fill and drain), so only a count at rest tells a
 * leak from traffic.
 */
const RSS_GROWTH_LIMIT = 0.15;
const FD_GROWTH_LIMIT = 10;
/** Idle keep-alive connections close after 5 s on both sides, idle password workers stop after 10 s. */
const SETTLE_MS = 15_000;
const WORDS = ['invoice', 'ledger', 'calendar', 'weather', 'mailer', 'pipeline', 'tracker', 'survey', 'payroll', 'inventory', 'chat', 'vault'];
const CATEGORIES = ['sales', 'billing', 'productivity', 'communication', 'security', 'storage'];
const SEEDED_EXTENSIONS = 200;

function minutesFromArguments(): number {
  const index = process.argv.indexOf('--minutes');
  if (index < 0) return 10;
  const minutes = Number(process.argv[index + 1]);
  if (!(minutes > 0)) {
    console.error('usage: npm run soak [-- --minutes N]   (N > 0; default 10)');
    process.exit(2);
  }
  return minutes;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const formatted = (value: number) => Math.round(value).toLocaleString('en');
const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

// ---------- HTTP ----------

/** One keep-alive pool for the whole load, as a real client fleet behind a proxy would hold. */
const agent = new Agent({ keepAlive: true, maxSockets: 128 });

interface Answer {
  status: number;
  body: any;
  cookie: string | null;
}

function send(base: string, method: string, path: string, options: { token?: string; json?: unknown } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.json === undefined ? undefined : JSON.stringify(options.json);
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const outgoing = request(base + path, { method, headers, agent }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const cookie = incoming.headers['set-cookie']?.find((value) => value.startsWith('platform_token=')) ?? null;
        resolve({ status: incoming.statusCode ?? 0, body: text ? JSON.parse(text) : null, cookie });
      });
      incoming.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

async function expect(base: string, method: string, path: string, status: number, options: { token?: string; json?: unknown } = {}): Promise<Answer> {
  const answer = await send(base, method, path, options);
  if (answer.status !== status) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)?.slice(0, 300)}`);
  return answer;
}

async function login(base: string): Promise<string> {
  const answer = await expect(base, 'POST', '/api/auth/login', 200, { json: ADMIN });
  return answer.cookie!.slice('platform_token='.length).split(';', 1)[0]!;
}

// ---------- subscribers ----------

interface Subscriber {
  url: string;
  server: Server;
  /** Event ids answered with 200 (a retried delivery counts once). */
  delivered: Set<string>;
}

async function startSubscriber(failing: () => boolean): Promise<Subscriber> {
  const delivered = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (failing()) {
        res.statusCode = 500;
        res.end();
        return;
      }
      delivered.add((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id);
      res.statusCode = 204;
      res.end();
    });
  });
  // As short as the daemon's own, so that idle delivery connections close before the count at rest.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server, delivered };
}

// ---------- the daemon ----------

interface Daemon {
  url: string;
  child: ChildProcess;
  dataDir: string;
}

async function startDaemon(): Promise<Daemon> {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-soak-'));
  const child = spawn(BIN, ['serve', '--port', '0', '--data-dir', dataDir], {
    env: {
      ...process.env,
      PLATFORM_ADMIN_EMAIL: ADMIN.email,
      PLATFORM_ADMIN_PASSWORD: ADMIN.password,
      // Three quick attempts: the flaky subscriber's failures become dead letters within a second.
      PLATFORM_RETRY_SCHEDULE: '100,200',
    },
    // The access log (a line per request) is not needed, and an unread pipe would fill up and stall the daemon.
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8');
  const onOutput = (chunk: string) => (output += chunk);
  child.stdout!.on('data', onOutput);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
    if (url) {
      child.stdout!.off('data', onOutput);
      child.stdout!.resume();
      return { url, child, dataDir };
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the daemon did not start:\n${output}`);
    await sleep(20);
  }
}

function stopDaemon(daemon: Daemon): Promise<void> {
  return new Promise((resolve) => {
    if (daemon.child.exitCode !== null) return resolve();
    daemon.child.once('exit', () => resolve());
    daemon.child.kill('SIGTERM');
  });
}

interface Sample {
  atMs: number;
  rssMb: number;
  fds: number;
  /** Of the fds: connections, which come and go with the load (idle keep-alive ones close after 5 s). */
  sockets: number;
}

function sample(pid: number, atMs: number): Sample {
  const rssKb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  let fds = 0;
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    fds += 1;
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets += 1;
    } catch {
      // Closed between the listing and the read.
    }
  }
  return { atMs, rssMb: rssKb / 1024, fds, sockets };
}

// ---------- load ----------

/** Requests of one kind at a steady rate: issued on schedule, at most `maxInFlight` at once. */
interface Stream {
  name: string;
  perSecond: number;
  maxInFlight: number;
  run: () => Promise<void>;
  issued: number;
  completed: number;
  inFlight: number;
  failures: string[];
}

function stream(name: string, perSecond: number, maxInFlight: number, run: () => Promise<void>): Stream {
  return { name, perSecond, maxInFlight, run, issued: 0, completed: 0, inFlight: 0, failures: [] };
}

/** Issues every stream's due requests every 10 ms until `until`; a stream at its in-flight cap falls behind. */
async function drive(streams: Stream[], startedAt: number, until: number): Promise<void> {
  while (Date.now() < until) {
    const elapsedSeconds = (Date.now() - startedAt) / 1000;
    for (const current of streams) {
      while (current.issued < Math.floor(elapsedSeconds * current.perSecond) && current.inFlight < current.maxInFlight) {
        current.issued += 1;
        current.inFlight += 1;
        current
          .run()
          .then(
            () => (current.completed += 1),
            (error: unknown) => current.failures.push(error instanceof Error ? error.message : String(error)),
          )
          .finally(() => (current.inFlight -= 1));
      }
    }
    await sleep(10);
  }
  while (streams.some((current) => current.inFlight > 0)) await sleep(10);
}

async function seed(base: string, token: string): Promise<void> {
  const keys = Array.from({ length: SEEDED_EXTENSIONS }, (_, n) => n);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < keys.length) {
        const n = keys[next++]!;
        const key = `ext-${String(n).padStart(4, '0')}`;
        await expect(base, 'POST', '/api/admin/marketplace/extensions', 201, {
          token,
          json: {
            extensionKey: key,
            name: `${WORDS[n % WORDS.length]} ${n}`,
            description: `A ${WORDS[(n * 7) % WORDS.length]} and ${WORDS[(n * 5) % WORDS.length]} extension, number ${n}.`,
            category: CATEGORIES[n % CATEGORIES.length],
          },
        });
        for (let version = 0; version < 3; version += 1) {
          await expect(base, 'POST', `/api/admin/marketplace/extensions/${key}/versions`, 201, {
            token,
            json: { version: `1.${version}.0`, artifactUrl: `https://artifacts.example.test/${key}/1.${version}.0.jar` },
          });
        }
      }
    }),
  );
  await expect(base, 'POST', '/api/admin/marketplace/extensions', 201, { token, json: { extensionKey: HOOKS, name: 'Soak hooks' } });
  await expect(base, 'POST', `/api/admin/marketplace/extensions/${HOOKS}/versions`, 201, {
    token,
    json: { version: '1.0.0', artifactUrl: 'https://artifacts.example.test/soak-hooks.jar' },
  });
  await expect(base, 'POST', '/api/admin/workspaces', 201, { token, json: { id: WORKSPACE, name: 'Soak' } });
  await expect(base, 'POST', `/api/workspaces/${WORKSPACE}/extensions`, 201, { token, json: { extensionKey: HOOKS } });
}

async function subscribe(base: string, token: string, eventKey: string, serviceBaseUrl: string): Promise<void> {
  await expect(base, 'POST', `/api/workspaces/${WORKSPACE}/subscriptions`, 201, {
    token,
    json: { eventKey, extensionKey: HOOKS, kind: 'EXTERNAL_SERVICE', serviceBaseUrl },
  });
}

async function main(): Promise<void> {
  const minutes = minutesFromArguments();
  const runMs = minutes * 60_000;
  const daemon = await startDaemon();
  const pid = daemon.child.pid!;
  const base = daemon.url;
  let flakyUp = false;
  const steadyA = await startSubscriber(() => false);
  const steadyB = await startSubscriber(() => false);
  const flaky = await startSubscriber(() => !flakyUp);
  const token = await login(base);
  await seed(base, token);
  await subscribe(base, token, STEADY_KEY, steadyA.url);
  await subscribe(base, token, STEADY_KEY, steadyB.url);
  await subscribe(base, token, FLAKY_KEY, flaky.url);

  const steadyEvents = new Set<string>();
  const flakyEvents = new Set<string>();
  let counter = 0;
  const publish = (eventKey: string, acknowledged: Set<string>) => async () => {
    const answer = await expect(base, 'POST', `/api/workspaces/${WORKSPACE}/events/publish`, 200, {
      token,
      json: { eventKey, payload: { n: (counter += 1), at: Date.now() } },
    });
    acknowledged.add(answer.body.meta.eventId as string);
  };
  const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)]!;
  const seeded = () => `ext-${String(Math.floor(Math.random() * SEEDED_EXTENSIONS)).padStart(4, '0')}`;
  let nextMajor = 2;
  let created = 0;

  const streams = [
    stream('publish', 300, 128, publish(STEADY_KEY, steadyEvents)),
    stream('publish (flaky)', 2, 8, publish(FLAKY_KEY, flakyEvents)),
    stream('browse', 200, 64, async () => {
      const kind = Math.random();
      if (kind < 0.4) await expect(base, 'GET', `/api/marketplace/extensions?search=${pick(WORDS)}&limit=20`, 200);
      else if (kind < 0.6) await expect(base, 'GET', `/api/marketplace/extensions?category=${pick(CATEGORIES)}&offset=${Math.floor(Math.random() * 20)}`, 200);
      else if (kind < 0.95) await expect(base, 'GET', `/api/marketplace/extensions/${seeded()}`, 200);
      else await expect(base, 'GET', '/api/marketplace/categories', 200);
    }),
    stream('catalog write', 3, 8, async () => {
      const kind = Math.random();
      if (kind < 0.1) {
        created += 1;
        await expect(base, 'POST', '/api/admin/marketplace/extensions', 201, { token, json: { extensionKey: `soak-${created}`, name: `Soak ${created}` } });
      } else if (kind < 0.8) {
        const version = `${(nextMajor += 1)}.0.0`;
        await expect(base, 'POST', `/api/admin/marketplace/extensions/${seeded()}/versions`, 201, {
          token,
          json: { version, artifactUrl: `https://artifacts.example.test/${version}.jar` },
        });
      } else {
        const path = `/api/admin/marketplace/extensions/${seeded()}/versions/1.0.0`;
        await expect(base, 'DELETE', path, 204, { token });
        await expect(base, 'PUT', `${path}/unyank`, 200, { token });
      }
    }),
    stream('login', 2, 8, async () => {
      const session = await login(base);
      await expect(base, 'GET', '/api/auth/me', 200, { token: session });
      await expect(base, 'POST', '/api/auth/logout', 200, { token: session });
    }),
    stream('replay', 0.1, 1, async () => {
      await expect(base, 'POST', '/api/admin/dead-letters/replay', 202, { token, json: {} });
    }),
  ];

  agent.destroy();
  await sleep(SETTLE_MS);
  const restBefore = sample(pid, 0);
  console.log(`soak: ${minutes} min against ${base} (pid ${pid}, data ${daemon.dataDir})`);
  console.log(`  at rest before the load: RSS ${restBefore.rssMb.toFixed(1)} MB, ${restBefore.fds} fds (${restBefore.sockets} sockets)`);
  console.log('  time     RSS MB  fds (sockets)   publishes  delivered A / B      browse  writes  logins  failed');
  const samples: Sample[] = [];
  const startedAt = Date.now();
  const flakyTimer = setInterval(() => (flakyUp = !flakyUp), FLAKY_PHASE_MS);
  const sampler = setInterval(() => {
    const now = sample(pid, Date.now() - startedAt);
    samples.push(now);
    const count = (name: string) => streams.find((current) => current.name === name)!.completed;
    const failed = streams.reduce((sum, current) => sum + current.failures.length, 0);
    console.log(
      `  ${`${Math.round(now.atMs / 1000)} s`.padStart(6)}  ${now.rssMb.toFixed(1).padStart(6)}  ${`${now.fds} (${now.sockets})`.padStart(13)}  ` +
        `${formatted(steadyEvents.size).padStart(10)}  ${`${formatted(steadyA.delivered.size)} / ${formatted(steadyB.delivered.size)}`.padStart(19)}  ` +
        `${formatted(count('browse')).padStart(8)}  ${formatted(count('catalog write')).padStart(6)}  ${formatted(count('login')).padStart(6)}  ${String(failed).padStart(6)}`,
    );
  }, SAMPLE_EVERY_MS);
  await drive(streams, startedAt, startedAt + runMs);
  clearInterval(sampler);
  clearInterval(flakyTimer);

  // The flaky subscriber recovers for good: replay what is left, then everything acknowledged must arrive.
  flakyUp = true;
  const allDelivered = () =>
    [...steadyEvents].every((id) => steadyA.delivered.has(id) && steadyB.delivered.has(id)) &&
    [...flakyEvents].every((id) => flaky.delivered.has(id));
  const drainDeadline = Date.now() + 60_000;
  while (!allDelivered() && Date.now() < drainDeadline) {
    await expect(base, 'POST', '/api/admin/dead-letters/replay', 202, { token, json: {} });
    await sleep(1_000);
  }
  agent.destroy();
  await sleep(SETTLE_MS);
  const restAfter = sample(pid, Date.now() - startedAt);
  const missing = {
    a: [...steadyEvents].filter((id) => !steadyA.delivered.has(id)).length,
    b: [...steadyEvents].filter((id) => !steadyB.delivered.has(id)).length,
    flaky: [...flakyEvents].filter((id) => !flaky.delivered.has(id)).length,
  };
  await stopDaemon(daemon);
  for (const subscriber of [steadyA, steadyB, flaky]) {
    subscriber.server.closeAllConnections();
    subscriber.server.close();
  }

  // Flatness: the first third includes warm-up (heap growth, JIT, caches filling), so the middle third is the reference.
  const third = Math.floor(samples.length / 3);
  if (third === 0) throw new Error('too few samples to judge; run for at least a minute');
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(samples.length - third);
  const rss = { middle: mean(middle.map((s) => s.rssMb)), last: mean(last.map((s) => s.rssMb)) };
  const rssFlat = rss.last <= rss.middle * (1 + RSS_GROWTH_LIMIT);
  const fdsFlat = restAfter.fds <= restBefore.fds + FD_GROWTH_LIMIT;
  const failures = streams.flatMap((current) => current.failures.map((failure) => `${current.name}: ${failure}`));
  const eventsComplete = missing.a + missing.b + missing.flaky === 0;
  const seconds = runMs / 1000;

  console.log('');
  console.log('| measure | before | after | change | limit | flat |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| RSS under load (MB, mean of the middle and the last third) | ${rss.middle.toFixed(1)} | ${rss.last.toFixed(1)} | ` +
      `${(((rss.last - rss.middle) / rss.middle) * 100).toFixed(1)} % | +${RSS_GROWTH_LIMIT * 100} % | ${rssFlat ? 'yes' : 'NO'} |`,
  );
  console.log(
    `| open fds at rest (before and after the load) | ${restBefore.fds} | ${restAfter.fds} | ${restAfter.fds - restBefore.fds} | ` +
      `+${FD_GROWTH_LIMIT} | ${fdsFlat ? 'yes' : 'NO'} |`,
  );
  console.log('');
  const range = (values: number[], digits = 0) => `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`;
  console.log(
    `${samples.length} samples: RSS ${range(samples.map((s) => s.rssMb), 1)} MB, fds ${range(samples.map((s) => s.fds))}, ` +
      `of them sockets ${range(samples.map((s) => s.sockets))}`,
  );
  console.log('');
  console.log('| stream | target /s | achieved /s | completed | failed |');
  console.log('|---|---|---|---|---|');
  for (const current of streams) {
    console.log(`| ${current.name} | ${current.perSecond} | ${(current.completed / seconds).toFixed(1)} | ${formatted(current.completed)} | ${current.failures.length} |`);
  }
  console.log('');
  console.log(
    `events: ${formatted(steadyEvents.size)} acknowledged to two subscribers, missing ${missing.a} at A and ${missing.b} at B; ` +
      `${formatted(flakyEvents.size)} to the flaky one (dead-lettered and replayed), missing ${missing.flaky}`,
  );
  for (const failure of failures.slice(0, 10)) console.log(`failed: ${failure}`);

  const problems = [
    ...(rssFlat ? [] : ['RSS grew']),
    ...(fdsFlat ? [] : ['open file descriptors grew']),
    ...(eventsComplete ? [] : ['acknowledged events are missing']),
    ...(failures.length === 0 ? [] : [`${failures.length} requests failed`]),
  ];
  console.log(problems.length === 0 ? 'verdict: FLAT, every event delivered' : `verdict: FAILED (${problems.join('; ')})`);
  rmSync(daemon.dataDir, { recursive: true, force: true });
  process.exit(problems.length === 0 ? 0 : 1);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
