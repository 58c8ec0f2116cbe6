import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLI_SCRATCH, PLATFORM_BIN } from './helpers/cli.js';
import { ADMIN } from './helpers/daemon.js';
import { call } from './helpers/http.js';
import { freePort } from './helpers/ports.js';
import { testDatabaseFor } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';

/**
 * The start is made slow without touching the daemon: at bcrypt cost 13,
 * hashing the first administrator's password takes the better part of a second,
 * long enough for many requests to arrive between the first connection and the
 * end of the start.
 */
const SLOW_START = { PLATFORM_BCRYPT_COST: '13', PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, PLATFORM_LOG_FORMAT: 'text' };
const SEED_KEYS: string[] = JSON.parse(readFileSync(new URL('../seed/catalog.json', import.meta.url), 'utf8')).extensions.map(
  (extension: { key: string }) => extension.key,
);

async function spawnServe(dir: string, port: number, extraArgs: string[] = []) {
  const databaseUrl = await testDatabaseFor(dir);
  const args = [PLATFORM_BIN, 'serve', '--port', String(port), '--data-dir', dir, ...(databaseUrl ? ['--database-url', databaseUrl] : []), ...extraArgs];
  const child = spawn(process.execPath, args, {
    cwd: CLI_SCRATCH,
    env: { PATH: process.env.PATH ?? '', HOME: CLI_SCRATCH, ...SLOW_START },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, output: () => output };
}

interface Answer {
  path: string;
  /** performance.now() when the request was sent and when its answer was complete: only their order is used. */
  sentAt: number;
  answeredAt: number;
  status: number;
  code: string;
  data: any;
  retryAfter: string | null;
}

/** Sends one request after another, from before the port accepts until `done()`; refused connections are retried at once. */
async function poll(url: string, method: string, path: string, json: unknown, done: () => boolean, answers: Answer[], exited: () => boolean) {
  while (!done()) {
    if (exited()) throw new Error('the daemon exited while starting');
    const sentAt = performance.now();
    try {
      const result = await call(url, method, path, json === undefined ? {} : { json });
      answers.push({
        path,
        sentAt,
        answeredAt: performance.now(),
        status: result.status,
        code: result.body?.code,
        data: result.body?.data,
        retryAfter: result.headers.get('retry-after'),
      });
    } catch {
      await sleep(1); // not listening yet
    }
  }
}

test('observed from the first connection: 503 while starting, and the first health 200 means the administrator can log in and the seed is listed', async () => {
  const dir = join(await tempDir(), 'data');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const daemon = await spawnServe(dir, port, ['--seed']);
  let ended = false;
  void daemon.exited.then(() => (ended = true));
  try {
    const answers: Answer[] = [];
    const healthy = () => answers.some((answer) => answer.path.startsWith('/api/health') && answer.status === 200);
    const stillStarting = () => healthy() || ended;
    await Promise.all([
      poll(url, 'GET', '/api/health', undefined, stillStarting, answers, () => ended),
      poll(url, 'GET', '/api/health/ready', undefined, stillStarting, answers, () => ended),
      poll(url, 'POST', '/api/auth/login', ADMIN, stillStarting, answers, () => ended),
      poll(url, 'GET', '/api/marketplace/extensions', undefined, stillStarting, answers, () => ended),
    ]);
    assert.not.ok(ended, `the daemon exited:\n${daemon.output()}`);

    // Right after the first 200: the administrator logs in, the seed is listed.
    const login = await call(url, 'POST', '/api/auth/login', { json: ADMIN });
    assert.is(login.status, 200, login.text);
    const listed = await call(url, 'GET', '/api/marketplace/extensions?limit=100');
    assert.is(listed.status, 200, listed.text);
    const keys = listed.body.data.map((extension: { key: string }) => extension.key);
    for (const key of SEED_KEYS) assert.ok(keys.includes(key), `${key} is listed`);

    const firstOk = answers
      .filter((answer) => answer.path.startsWith('/api/health') && answer.status === 200)
      .sort((a, b) => a.answeredAt - b.answeredAt)[0]!;
    const health = answers.filter((answer) => answer.path.startsWith('/api/health') && answer.answeredAt < firstOk.answeredAt && answer !== firstOk);
    // Answered before the first 200 was even asked for: certainly answered while starting.
    const others = answers.filter((answer) => !answer.path.startsWith('/api/health') && answer.answeredAt < firstOk.sentAt);
    assert.ok(health.length > 0, 'health was asked while the daemon was starting');
    assert.ok(others.length > 0, 'other routes were asked while the daemon was starting');
    for (const answer of health) {
      assert.equal([answer.path, answer.status, answer.data?.status], [answer.path, 503, 'starting']);
    }
    for (const answer of others) {
      assert.equal([answer.path, answer.status, answer.code, answer.retryAfter], [answer.path, 503, 'UNAVAILABLE', '1']);
    }
    // Whatever was answered while starting is answered 503 UNAVAILABLE, wherever it falls.
    for (const answer of answers.filter((answer) => answer.status === 503)) {
      assert.equal([answer.code, answer.retryAfter], ['UNAVAILABLE', '1']);
    }
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test('a SIGTERM while starting stops the daemon cleanly as soon as the start is complete', async () => {
  const dir = join(await tempDir(), 'data');
  const port = await freePort();
  const daemon = await spawnServe(dir, port);
  let ended = false;
  void daemon.exited.then(() => (ended = true));
  const answers: Answer[] = [];
  try {
    await poll(`http://127.0.0.1:${port}`, 'GET', '/api/health', undefined, () => answers.length > 0 || ended, answers, () => ended);
    assert.equal(answers[0]?.data, { status: 'starting' }, 'the signal arrives while the daemon starts');
  } finally {
    daemon.child.kill('SIGTERM');
  }
  assert.is(await daemon.exited, 0, daemon.output());
  assert.match(daemon.output(), 'received SIGTERM while starting; stopping as soon as the start is complete');
  assert.match(daemon.output(), 'platform stopped (SIGTERM)');
  assert.not.ok(existsSync(join(dir, 'daemon.lock')), 'the lock is released');
});

test.run();
