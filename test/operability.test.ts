import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { METHODS } from 'node:http';
import { connect } from 'node:net';
import { chmodSync, chownSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PLATFORM_BIN } from './helpers/cli.js';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { call } from './helpers/http.js';
import { startSubscriber } from './helpers/subscriber.js';
import { fillDisk, needsSmallDisk, withSmallDisk } from './helpers/tmpfs.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

const ADMIN_ENV = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password };

const METRICS_TOKEN = 'scrape-token-0123456789abcdef';

/** GET /metrics as Prometheus does: the body is text, not an envelope. */
async function scrape(token?: string): Promise<{ status: number; contentType: string; text: string }> {
  const response = await fetch(`${t.url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
}

/** The value of one sample line (`name{labels} value`), or null when absent. */
function sample(text: string, series: string): number | null {
  const line = text.split('\n').find((entry) => entry.startsWith(series + ' '));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

let t: TestDaemon;
test.before(async () => {
  t = await startTestDaemon({ metricsToken: METRICS_TOKEN, dispatch: { ...FAST_DISPATCH, retrySchedule: [] } });
});
test.after(async () => {
  await t.destroy();
});

test('/metrics: Prometheus text for the scrape token or an ADMIN; route patterns, never raw paths', async () => {
  const admin = await t.admin();
  const subscriber = await startSubscriber((_, index) => ({ status: index === 0 ? 200 : 500 }));
  try {
    await workspaceWith(admin, 'acme', 'crm');
    await subscribeExternal(admin, 'acme', 'deal.won', 'crm', subscriber.url);
    for (let index = 0; index < 2; index += 1) {
      assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'deal.won', payload: {} })).status, 200);
    }
    await waitFor('both deliveries settled', async () => (await admin.get('/api/admin/status')).body.data.pendingDeliveries === 0);
    await t.anon.get('/api/no/such/path/123');
    await t.anon.get('/api/another/unknown/456');
    await call(t.url, 'POST', '/api/webhooks/nobody', { json: {} });

    const scraped = await scrape(METRICS_TOKEN);
    assert.is(scraped.status, 200, scraped.text.slice(0, 200));
    assert.match(scraped.contentType, /^text\/plain; version=0\.0\.4/);
    const text = scraped.text;
    assert.is(sample(text, 'platform_http_requests_total{method="POST",route="/api/workspaces/:id/events/publish",status="200"}'), 2);
    assert.is(sample(text, 'platform_http_requests_total{method="GET",route="unmatched",status="404"}'), 2);
    assert.not.match(text, '/api/no/such/path');
    assert.match(text, /platform_http_request_duration_seconds_bucket\{le="0\.0005",method="POST",route="\/api\/workspaces\/:id\/events\/publish"\}/);
    assert.is(sample(text, 'platform_events_published_total'), 2);
    assert.is(sample(text, 'platform_deliveries_total{outcome="delivered"}'), 1);
    assert.is(sample(text, 'platform_deliveries_total{outcome="dead_lettered"}'), 1);
    assert.is(sample(text, 'platform_delivery_duration_seconds_count'), 2);
    // The shared queue's gauges may be read through a cache of a second (PostgreSQL): wait for them.
    await waitFor('the queue gauges current', async () => {
      const current = (await scrape(METRICS_TOKEN)).text;
      return sample(current, 'platform_deliveries_pending') === 0 && sample(current, 'platform_dead_letters') === 1;
    });
    assert.is(sample(text, 'platform_webhook_requests_total{outcome="unknown_extension"}'), 1);
    assert.ok(sample(text, 'process_resident_memory_bytes')! > 0, 'Node process metrics');

    assert.is((await scrape(admin.token)).status, 200, 'an ADMIN session may scrape too');
  } finally {
    await subscriber.close();
  }
});

test('/metrics labels methods outside the usual seven as OTHER: 50 odd methods add no series of their own', async () => {
  const usual = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
  // Every other method Node's parser accepts (CONNECT takes the connection over), then made-up ones it refuses.
  const accepted = METHODS.filter((method) => !usual.includes(method) && method !== 'CONNECT');
  const odd = [...accepted, ...Array.from({ length: 50 - accepted.length }, (_, index) => `ODD${index}`)];
  assert.is(new Set(odd).size, 50);
  const methodsOf = (text: string) =>
    new Set([...text.matchAll(/^platform_http_request[^{]*\{[^}]*method="([^"]*)"/gm)].map((match) => match[1]));
  const before = (await scrape(METRICS_TOKEN)).text;
  const countOf = (text: string) => sample(text, 'platform_http_requests_total{method="OTHER",route="/api/health",status="405"}') ?? 0;

  const answers = await Promise.all(odd.map((method) => rawRequest(`${method} /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)));
  assert.is(answers.filter((answer) => answer.startsWith('HTTP/1.1 405 ')).length, accepted.length);

  const after = (await scrape(METRICS_TOKEN)).text;
  assert.equal([...methodsOf(after)].filter((method) => !methodsOf(before).has(method)), ['OTHER']);
  assert.ok([...methodsOf(after)].every((method) => [...usual, 'OTHER'].includes(method!)), [...methodsOf(after)].join(','));
  assert.is(countOf(after) - countOf(before), accepted.length);
});

/** Sends raw bytes to the daemon; everything it answers, once it closes. */
function rawRequest(text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1', () => socket.write(text));
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', () => undefined);
  });
}

test('/metrics refuses anything else with 401, and counts the refusals', async () => {
  const user = await createUser(t, 'viewer@example.test');
  const refusals = [
    await call(t.url, 'GET', '/metrics'),
    await call(t.url, 'GET', '/metrics', { token: METRICS_TOKEN.slice(0, -1) }),
    await call(t.url, 'GET', '/metrics', { token: METRICS_TOKEN + 'x' }),
    await user.get('/metrics'),
  ];
  for (const refused of refusals) {
    assert.is(refused.status, 401);
    assert.is(refused.body.code, 'UNAUTHORIZED');
  }
  const { text } = await scrape(METRICS_TOKEN);
  assert.is(sample(text, 'platform_metrics_refused_total'), 4);
  // One route answered with two statuses: a series per status, one histogram for the route.
  assert.is(sample(text, 'platform_http_requests_total{method="GET",route="/metrics",status="401"}'), 4);
  const answered = sample(text, 'platform_http_requests_total{method="GET",route="/metrics",status="200"}')!;
  assert.ok(answered >= 1);
  assert.is(sample(text, 'platform_http_request_duration_seconds_count{method="GET",route="/metrics"}'), answered + 4);
});

test('every answer carries X-Request-Id: a sane incoming one is kept, anything else replaced; errors name it in meta', async () => {
  const kept = await call(t.url, 'GET', '/api/health', { headers: { 'x-request-id': 'lb-42:abc.DEF_9-x' } });
  assert.is(kept.headers.get('x-request-id'), 'lb-42:abc.DEF_9-x');
  for (const insane of ['has space', 'a'.repeat(129), 'semi;colon', 'new\\nline']) {
    const replaced = await call(t.url, 'GET', '/api/health', { headers: { 'x-request-id': insane } });
    assert.match(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f]{12}-[0-9a-z]+$/);
  }
  const failed = await call(t.url, 'GET', '/api/admin/users', { headers: { 'x-request-id': 'trace-1' } });
  assert.is(failed.status, 401);
  assert.is(failed.headers.get('x-request-id'), 'trace-1');
  assert.is(failed.body.meta.requestId, 'trace-1');
  const access = t.logs.join('').split('\n').find((line) => line.includes('trace-1'));
  assert.match(access ?? '', /GET \/api\/admin\/users 401 \d+\.\dms trace-1$/);

  // Answers that set their headers other ways than the envelope does: an object to writeHead, none at all (204), text.
  const admin = await t.admin();
  await admin.post('/api/admin/workspaces', { id: 'request-ids', name: 'Request ids' });
  // Bodies read to the end, so that no connection is left open.
  const answered = async (response: Response) => ({ status: response.status, headers: response.headers, text: await response.text() });
  const others = [
    await answered(await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}`, 'x-request-id': 'trace-metrics' } })),
    await answered(await fetch(`${t.url}/api/openapi.json`, { headers: { 'x-request-id': 'trace-openapi' } })),
    // Removing a user who is no member answers 204.
    await admin.delete(`/api/admin/workspaces/request-ids/members/${randomUUID()}`, { headers: { 'x-request-id': 'trace-204' } }),
  ];
  assert.equal(
    others.map((answer) => [answer.status, answer.headers.get('x-request-id')]),
    [[200, 'trace-metrics'], [200, 'trace-openapi'], [204, 'trace-204']],
  );
});

needsSmallDisk(test)('/api/health/ready: 503 with the reason on a full disk or without a dispatcher; liveness stays 200', async () => {
  await withSmallDisk('2m', async (dir) => {
    const d = await startTestDaemon({}, dir);
    try {
      assert.is((await d.anon.get('/api/health/ready')).status, 200);
      fillDisk(`${dir}/filler`);
      const full = await waitFor('503 on a full disk', async () => {
        const result = await d.anon.get('/api/health/ready');
        return result.status === 503 && result;
      });
      assert.is(full.body.code, 'UNAVAILABLE');
      assert.match(full.body.message ?? '', 'the disk is full');
      assert.is((await d.anon.get('/api/health')).status, 200, 'liveness is unaffected');
      unlinkSync(`${dir}/filler`);
      await waitFor('200 once there is room again', async () => (await d.anon.get('/api/health/ready')).status === 200);

      await d.daemon.services.dispatcher.stop(100);
      const stopped = await waitFor('503 without a dispatcher', async () => {
        const result = await d.anon.get('/api/health/ready');
        return result.status === 503 && result;
      });
      assert.match(stopped.body.message ?? '', 'the dispatcher is not running');
    } finally {
      await d.stop();
    }
  });
});

/** Root writes through any mode bits: the daemon runs as nobody so that chmod 0555 means read-only. */
const NOBODY = 65534;

/** Whether nobody can reach bin/platform: a clone under a private folder (mktemp -d is 0700) keeps it out. */
function nobodyReaches(file: string): boolean {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

const asRoot = process.getuid?.() === 0;
/** As root the daemon must run as nobody, who cannot reach a clone under a private folder: then the test is skipped (the full-disk case still runs). */
const readOnlyTest = !asRoot || nobodyReaches(PLATFORM_BIN) ? test : test.skip;

readOnlyTest('/api/health/ready: 503 while the data directory is read-only (chmod 0555), 200 once writable again', async () => {
  const parent = await tempDir();
  const dataDir = join(parent, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  if (asRoot) {
    chmodSync(parent, 0o711);
    chownSync(dataDir, NOBODY, NOBODY);
  }
  const child = spawn(process.execPath, [PLATFORM_BIN, 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', HOME: '/tmp', PLATFORM_BCRYPT_COST: '4', ...ADMIN_ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    const url = await waitFor('the start line', () => /listening on (http:\/\/[^\s"]+)/.exec(output)?.[1] ?? '');
    assert.is((await call(url, 'GET', '/api/health/ready')).status, 200);
    chmodSync(dataDir, 0o555);
    const refused = await waitFor('503 on a read-only data directory', async () => {
      const result = await call(url, 'GET', '/api/health/ready');
      return result.status === 503 && result;
    });
    assert.match(refused.body.message ?? '', 'not writable (permission denied)');
    chmodSync(dataDir, 0o700);
    await waitFor('200 once writable again', async () => (await call(url, 'GET', '/api/health/ready')).status === 200);
  } finally {
    child.kill('SIGTERM');
    await exited;
    await rm(parent, { recursive: true, force: true });
  }
});

test.run();
