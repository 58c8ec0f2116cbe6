import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN } from './helpers/daemon.js';
import { tempDir } from './helpers/temp.js';
import { runCli, spawnDaemon, type DaemonProcess } from './helpers/cli.js';
import { api, call, tokenOf } from './helpers/http.js';
import { filesOnly } from './helpers/postgres.js';
import { waitFor } from './helpers/wait.js';

const adminEnv = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password };

async function adminClient(daemon: DaemonProcess) {
  return api(daemon.url, tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
}

filesOnly(test)('serve on an empty data directory creates what it needs (0700/0600) and prints one start line (files only: checks the data files it creates)', async () => {
  const dir = join(await tempDir(), 'fresh');
  const daemon = await spawnDaemon(dir, adminEnv);
  try {
    assert.match(daemon.output(), new RegExp(`platform listening on http://127\\.0\\.0\\.1:\\d+ \\(data: ${dir}\\)`));
    assert.is(statSync(dir).mode & 0o777, 0o700);
    for (const file of ['users.json', 'revocations.log', 'jwt-secret', 'daemon.lock']) {
      assert.is(statSync(join(dir, file)).mode & 0o777, 0o600, file);
    }
    assert.is(readFileSync(join(dir, 'daemon.lock'), 'utf8').split('\n')[0], String(daemon.child.pid));
    assert.is((await call(daemon.url, 'GET', '/api/health')).status, 200);
  } finally {
    daemon.child.kill('SIGTERM');
    assert.is(await daemon.exited, 0);
  }
  assert.not.ok(existsSync(join(dir, 'daemon.lock')), 'the lock is released on a graceful stop');
});

test('SIGTERM finishes the request in flight, then exits 0', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, adminEnv);
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${daemon.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', expect: '100-continue' },
    });
    // The server has parsed the request once it answers 100 Continue: it is in flight.
    req.on('continue', () => {
      daemon.child.kill('SIGTERM');
      setTimeout(() => req.end(JSON.stringify(ADMIN)), 100);
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.flushHeaders();
  });
  const result = await answer;
  assert.is(result.status, 200, result.body);
  assert.is(JSON.parse(result.body).data.email, ADMIN.email);
  assert.is(await daemon.exited, 0);
  assert.match(daemon.output(), 'platform stopped');
});

test('a second daemon on the same data directory is refused with exit code 1', async () => {
  const dir = await tempDir();
  const first = await spawnDaemon(dir, adminEnv);
  try {
    const second = await runCli(['serve', '--port', '0', '--data-dir', dir]);
    assert.is(second.code, 1);
    assert.match(second.stderr, `data directory ${dir} is in use by another platform daemon (pid ${first.child.pid})`);
    assert.is((await call(first.url, 'GET', '/api/health')).status, 200, 'the first keeps running');
  } finally {
    first.child.kill('SIGTERM');
    await first.exited;
  }
});

test('a stale lock of a dead process is taken over', async () => {
  const dir = await tempDir();
  const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
  writeFileSync(join(dir, 'daemon.lock'), `${dead}\n`);
  const daemon = await spawnDaemon(dir, adminEnv);
  try {
    assert.is(readFileSync(join(dir, 'daemon.lock'), 'utf8').split('\n')[0], String(daemon.child.pid));
    assert.match(daemon.output(), `took over the stale lock ${join(dir, 'daemon.lock')} (pid ${dead}, not running)`);
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test('a data file that is not JSON stops the start with exit 1, names the file and leaves it untouched', async () => {
  const dir = await tempDir();
  const usersFile = join(dir, 'users.json');
  writeFileSync(usersFile, '{"schemaVersion":1,"users":[');
  const result = await runCli(['serve', '--port', '0', '--data-dir', dir], { env: adminEnv });
  assert.is(result.code, 1);
  assert.match(result.stderr, `data file ${usersFile} is not valid JSON`);
  assert.is(readFileSync(usersFile, 'utf8'), '{"schemaVersion":1,"users":[');
  assert.not.ok(existsSync(join(dir, 'daemon.lock')), 'the lock is released after a failed start');
});

test('SIGKILL right after acknowledged writes loses none of them', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, adminEnv);
  const admin = await adminClient(daemon);
  const emails = Array.from({ length: 20 }, (_, i) => `durable-${i}@example.test`);
  const created = await Promise.all(
    emails.map((email) => admin.post('/api/admin/users', { email, fullName: email, password: 'durable-password' })),
  );
  for (const result of created) assert.is(result.status, 201);
  daemon.child.kill('SIGKILL');
  assert.is(await daemon.exited, 'SIGKILL');

  const restarted = await spawnDaemon(dir, adminEnv);
  try {
    const list = await (await adminClient(restarted)).get('/api/admin/users');
    const stored = new Set(list.body.data.map((user: { email: string }) => user.email));
    for (const email of emails) assert.ok(stored.has(email), `${email} survived the crash`);
    assert.ok(restarted.output().length > 0);
  } finally {
    restarted.child.kill('SIGTERM');
    await restarted.exited;
  }
});

test('flags win over environment variables; bad values are usage errors (exit 2)', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, { ...adminEnv, PLATFORM_MAX_BODY: '1mb' }, ['--max-body', '2kb']);
  try {
    const result = await call(daemon.url, 'POST', '/api/auth/login', {
      json: { email: ADMIN.email, password: 'x'.repeat(3000) },
    });
    assert.is(result.status, 413, '--max-body 2kb applies, not PLATFORM_MAX_BODY');
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
  const badPort = await runCli(['serve', '--port', 'eighty', '--data-dir', dir]);
  assert.is(badPort.code, 2);
  assert.match(badPort.stderr, '--port');
  const shortSecret = await runCli(['serve', '--port', '0', '--data-dir', dir], { env: { PLATFORM_JWT_SECRET: 'short' } });
  assert.is(shortSecret.code, 2);
  assert.not.match(shortSecret.stderr, 'short"', 'the secret is not echoed');
});

test('PLATFORM_HEADERS_TIMEOUT and PLATFORM_REQUEST_TIMEOUT apply; a headers limit longer than the request limit is a usage error', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, { ...adminEnv, PLATFORM_HEADERS_TIMEOUT: '300', PLATFORM_REQUEST_TIMEOUT: '600' });
  const slow = connect(Number(new URL(daemon.url).port), '127.0.0.1');
  let received = '';
  let closed = false;
  slow.on('data', (chunk) => (received += chunk));
  slow.on('close', () => (closed = true));
  slow.on('error', () => undefined);
  const dribble = setInterval(() => closed || slow.write('a'), 50);
  try {
    slow.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    // Generous against 300 ms; the default limit is 10 s.
    await waitFor('the dribbling connection to be cut', () => closed, 5_000);
    assert.match(received, /^HTTP\/1\.1 408 /);
  } finally {
    clearInterval(dribble);
    slow.destroy();
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
  const inverted = await runCli(['serve', '--port', '0', '--data-dir', dir], { env: { PLATFORM_HEADERS_TIMEOUT: '20000', PLATFORM_REQUEST_TIMEOUT: '10000' } });
  assert.is(inverted.code, 2);
  assert.match(inverted.stderr, 'PLATFORM_HEADERS_TIMEOUT (20000) must not be longer than PLATFORM_REQUEST_TIMEOUT (10000)');
});

test('PLATFORM_HOST and PLATFORM_PORT are honoured; a port in use is a clear start failure', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    const result = await runCli(['serve', '--data-dir', await tempDir()], {
      env: { ...adminEnv, PLATFORM_HOST: '127.0.0.1', PLATFORM_PORT: String(port) },
    });
    assert.is(result.code, 1);
    assert.match(result.stderr, `port ${port} is in use`);
  } finally {
    blocker.close();
  }
});

test('PLATFORM_JWT_SECRET replaces the generated secret file', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, { ...adminEnv, PLATFORM_JWT_SECRET: 's'.repeat(40) });
  try {
    assert.not.ok(existsSync(join(dir, 'jwt-secret')));
    const token = tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN }));
    assert.is((await api(daemon.url, token).get('/api/auth/me')).status, 200);
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test.run();
