/**
 * `npm run profile` (after `npm run build`): where a delivered event's CPU
 * time goes. Runs scenario 4 (publish + deliver to one subscriber, 50
 * connections) against a daemon started with `--cpu-prof`, then sums the
 * profile's self time by part of the work (HTTP in, auth, validation, event
 * log, dispatch, HTTP out, signing, records, metrics, access lines, stream
 * items, GC, …) and prints each part in µs per delivered event, with the
 * heaviest functions. docs/decisions.md keeps what it said.
 *
 * PROFILE_SECONDS (default 10) sets the load's length. PROFILE_SCENARIO=detail
 * profiles scenario 1 instead (an extension's detail, read without a token),
 * in µs per request. PROFILE_BUILD=DIR profiles another built clone or
 * worktree's daemon, to compare where two builds spend.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const MAIN = process.env.PROFILE_BUILD ? join(process.env.PROFILE_BUILD, 'dist', 'cli', 'main.js') : fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const DETAIL = process.env.PROFILE_SCENARIO === 'detail';
const ADMIN = { email: 'admin@bench.test', password: 'bench-password-1' };
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 10);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The parts of the work, by where the code lives; the first match wins. */
const PARTS: [string, RegExp][] = [
  ['garbage collection', /^\(garbage collector\)$/],
  ['idle', /^\(idle\)$/],
  ['access lines', /daemon\/log\.js|daemon\/http\/observe\.js/],
  ['metrics', /prom-client|daemon\/metrics\.js/],
  ['auth (JWT, session)', /jose|daemon\/auth\//],
  ['validation', /valibot|daemon\/validation\.js|contract\//],
  ['router and envelope (h3)', /node_modules\/(h3|radix3|ufo)\/|daemon\/http\/(endpoint|envelope|routes|body|app|server|cross-site|hosts|cors|headers)\.js/],
  ['delivery records', /daemon\/store\/file\/delivery-records/],
  ['stream items (activity)', /daemon\/events\/activity|live-streams|store\/file\/activity/],
  ['event log and outbox (files)', /daemon\/store\/|daemon\/files\.js|daemon\/paging\.js/],
  ['publishing (events service)', /daemon\/events\//],
  ['HTTP out (delivery transport)', /daemon\/dispatch\/(transport|external)\.js/],
  ['dispatch', /daemon\/dispatch\//],
  ['workspaces and subscriptions', /daemon\/workspaces\//],
  ['other daemon code', /\/dist\//],
  ['HTTP in and out (Node)', /node:_http|node:http|_http_|node:net|node:internal\/(http|net|stream|streams|url)|node:events|llhttp|undici|^writev$|^writeUtf8String$|^writeLatin1String$/],
  ['file system (Node)', /node:fs|node:internal\/fs|^(writeBuffer|writeBuffers|fdatasync|fsync|openFileHandle|close|fstat|read|rename|lstat)$/],
  ['crypto (Node)', /node:crypto|node:internal\/crypto/],
  ['JSON', /^JSON\.|^(stringify|parse)$/],
  ['program, microtasks, timers (not attributed)', /^\(program\)$|^runMicrotasks$|^processTicksAndRejections$|node:internal\/(process|timers|async_hooks)|node:timers/],
];

function partOf(frame: ProfileNode['callFrame']): string {
  for (const [name, pattern] of PARTS) if (pattern.test(frame.url) || pattern.test(frame.functionName)) return name;
  return frame.url === '' ? 'other native code' : `other: ${frame.url.replace(/^.*\/node_modules\//, '')}`;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-profile-'));
  const profileDir = mkdtempSync(join(tmpdir(), 'platform-profile-cpu-'));
  let delivered = 0;
  const subscriber = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered += 1;
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => subscriber.listen(0, '127.0.0.1', resolve));
  const subscriberUrl = `http://127.0.0.1:${(subscriber.address() as { port: number }).port}`;

  // As bin/platform starts it, with the profiler (which NODE_OPTIONS may not turn on).
  const child = spawn(process.execPath, ['--expose-gc', '--cpu-prof', `--cpu-prof-dir=${profileDir}`, MAIN, 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { ...process.env, MALLOC_MMAP_THRESHOLD_: '131072', PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the daemon exited (${code}): ${output}`)));
  });
  child.stdout!.resume();

  const call = async (method: string, path: string, token: string | null, body?: unknown) => {
    const response = await fetch(url + path, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response;
  };
  const login = await call('POST', '/api/auth/login', null, ADMIN);
  const token = /platform_token=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]!;
  await call('POST', '/api/admin/marketplace/extensions', token, { extensionKey: 'sink', name: 'Sink', description: 'A sink and pipeline extension, number 42, for teams that need a sink.' });
  for (let minor = 0; minor < 5; minor += 1) {
    await call('POST', '/api/admin/marketplace/extensions/sink/versions', token, { version: `1.${minor}.0`, artifactUrl: `https://x.test/sink-1.${minor}.0.jar`, requiresPlatform: '0.1.0' });
  }
  let result: autocannon.Result;
  if (DETAIL) {
    // Scenario 1: each request counts as one "event" below.
    result = await autocannon({ url: `${url}/api/marketplace/extensions/sink`, connections: 50, duration: SECONDS });
    delivered = result['2xx'];
  } else {
    await call('POST', '/api/admin/workspaces', token, { id: 'bench', name: 'Bench' });
    await call('POST', '/api/workspaces/bench/extensions', token, { extensionKey: 'sink' });
    await call('POST', '/api/workspaces/bench/subscriptions', token, { eventKey: 'bench.tick', extensionKey: 'sink', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: subscriberUrl });
    result = await autocannon({
      url: `${url}/api/workspaces/bench/events/publish`,
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ eventKey: 'bench.tick', payload: { dealId: 'D-1', amount: 1200, currency: 'EUR' } }),
      connections: 50,
      duration: SECONDS,
    });
  }
  const published = result['2xx'];
  const deadline = Date.now() + 60_000;
  while (delivered < published && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
  subscriber.close();

  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error('the daemon wrote no profile');
  const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, index) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  const parts = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const part = partOf(frame);
    parts.set(part, (parts.get(part) ?? 0) + us);
    const where = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/node_modules\//, '').replace(/^.*\/dist\//, 'dist/')}:${frame.lineNumber + 1}`;
    functions.set(where, (functions.get(where) ?? 0) + us);
  }
  const busy = [...parts].filter(([name]) => name !== 'idle').reduce((sum, [, us]) => sum + us, 0);
  const perEvent = (us: number) => (us / delivered).toFixed(1);
  const unit = DETAIL ? 'request' : 'delivered event';
  console.log(
    DETAIL
      ? `${published} requests answered (${Math.round(published / SECONDS)}/s); ${perEvent(busy)} µs of the daemon's main thread per request`
      : `${published} published (${Math.round(published / SECONDS)}/s), ${delivered} delivered; ${perEvent(busy)} µs of the daemon's main thread per delivered event`,
  );
  console.log(`\n| part | µs per ${unit} | share |\n|---|---|---|`);
  for (const [name, us] of [...parts].filter(([part]) => part !== 'idle').sort((a, b) => b[1] - a[1])) {
    console.log(`| ${name} | ${perEvent(us)} | ${((us / busy) * 100).toFixed(1)} % |`);
  }
  console.log(`\nheaviest functions (self time, µs per ${unit}):`);
  for (const [where, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`  ${perEvent(us).padStart(6)}  ${where}`);
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(profileDir, { recursive: true, force: true });
}

await main();
