import { mkdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { call, type HttpResult } from './helpers/http.js';
import { runCli, spawnDaemon } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';
import { filesOnly } from './helpers/postgres.js';

let t: TestDaemon;

test.before(async () => {
  t = await startTestDaemon({ maxBodyBytes: 4096 });
});
test.after(async () => {
  await t.destroy();
});

function assertEnvelope(result: HttpResult, status: number, code: string): void {
  assert.is(result.status, status, `status of ${result.text}`);
  assert.equal(Object.keys(result.body), ['code', 'message', 'data', 'meta', 'timestamp']);
  assert.is(result.body.code, code);
  assert.match(result.body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.match(result.headers.get('content-type') ?? '', 'application/json');
  if (code === 'SUCCESS') assert.is(result.body.message, null);
  else assert.type(result.body.message, 'string');
}

test('health answers the envelope with status and version, no authentication needed', async () => {
  const result = await t.anon.get('/api/health');
  assertEnvelope(result, 200, 'SUCCESS');
  assert.equal(result.body.data, { status: 'ok', version: '0.1.0', sdkVersion: '1.0.0' });
  assert.is(result.body.meta, null);
});

test('every answer carries nosniff and no-store', async () => {
  for (const result of [await t.anon.get('/api/health'), await t.anon.get('/api/unknown')]) {
    assert.is(result.headers.get('x-content-type-options'), 'nosniff');
    assert.is(result.headers.get('cache-control'), 'no-store');
  }
});

test('unknown routes are 404 NOT_FOUND in the envelope', async () => {
  assertEnvelope(await t.anon.get('/api/nothing/here'), 404, 'NOT_FOUND');
  assertEnvelope(await t.anon.get('/api'), 404, 'NOT_FOUND');
});

test('a known path with another method is 405 with an Allow header', async () => {
  const result = await t.anon.delete('/api/health');
  assertEnvelope(result, 405, 'METHOD_NOT_ALLOWED');
  assert.is(result.headers.get('allow'), 'GET');
  const login = await t.anon.get('/api/auth/login');
  assertEnvelope(login, 405, 'METHOD_NOT_ALLOWED');
  assert.is(login.headers.get('allow'), 'POST');
});

test('a body that is not JSON is 400 INVALID_JSON', async () => {
  const result = await call(t.url, 'POST', '/api/auth/login', {
    raw: '{"email": "a@b",',
    headers: { 'content-type': 'application/json' },
  });
  assertEnvelope(result, 400, 'INVALID_JSON');
});

test('a body that is not UTF-8 is 400 INVALID_JSON', async () => {
  const result = await call(t.url, 'POST', '/api/auth/login', {
    raw: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    headers: { 'content-type': 'application/json' },
  });
  assertEnvelope(result, 400, 'INVALID_JSON');
});

test('a body with another content type is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
  const result = await call(t.url, 'POST', '/api/auth/login', {
    raw: 'email=a&password=b',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assertEnvelope(result, 415, 'UNSUPPORTED_MEDIA_TYPE');
  const missing = await call(t.url, 'POST', '/api/auth/login', { raw: '{}' });
  assert.is(missing.status, 415, 'a body without a content type');
});

test('content type parameters and case are accepted', async () => {
  const result = await call(t.url, 'POST', '/api/auth/login', {
    raw: JSON.stringify({ email: 'nobody@example.test', password: 'whatever-1' }),
    headers: { 'content-type': 'Application/JSON; charset=utf-8' },
  });
  assertEnvelope(result, 401, 'INVALID_CREDENTIALS');
});

test('a charset other than UTF-8 is 415, however it is spelt; utf-8 is accepted quoted or not', async () => {
  const body = JSON.stringify({ email: 'nobody@example.test', password: 'whatever-1' });
  const send = (contentType: string) => call(t.url, 'POST', '/api/auth/login', { raw: body, headers: { 'content-type': contentType } });
  for (const contentType of [
    'application/json; charset=latin1',
    'application/json;charset=ISO-8859-1',
    'application/json; charset="utf-16"',
    'application/json; CHARSET=us-ascii',
    'application/json; charset=utf-8; charset=latin1',
  ]) {
    assertEnvelope(await send(contentType), 415, 'UNSUPPORTED_MEDIA_TYPE');
  }
  for (const contentType of ['application/json; charset="UTF-8"', 'application/json;charset=utf-8', 'application/json; foo=bar']) {
    assertEnvelope(await send(contentType), 401, 'INVALID_CREDENTIALS');
  }
});

test('a body over --max-body is 413 PAYLOAD_TOO_LARGE, declared or streamed', async () => {
  const big = JSON.stringify({ email: 'a@b', password: 'x'.repeat(5000) });
  const declared = await call(t.url, 'POST', '/api/auth/login', { raw: big, headers: { 'content-type': 'application/json' } });
  assertEnvelope(declared, 413, 'PAYLOAD_TOO_LARGE');

  // Chunked: no Content-Length, so the limit must be enforced while reading.
  const streamed = await new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request(`${t.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    for (let i = 0; i < 10; i += 1) req.write('x'.repeat(1000));
    req.end();
  });
  assert.is(streamed.status, 413);
  assert.is(streamed.body.code, 'PAYLOAD_TOO_LARGE');
});

test('bodies nested deeper than 64 levels are refused before JSON.parse; the auth routes take at most 8 KiB', async () => {
  const roomy = await startTestDaemon();
  try {
    const login = (raw: string) => call(roomy.url, 'POST', '/api/auth/login', { raw, headers: { 'content-type': 'application/json' } });
    const nested = (levels: number) => `{"email":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)},"password":"x"}`;
    const deepest = await login(nested(64));
    assertEnvelope(deepest, 400, 'VALIDATION_ERROR');
    assert.equal(deepest.body.meta.issues.map((issue: { path: string }) => issue.path), ['email'], '64 levels reach the schema');
    const tooDeep = await login(nested(65));
    assertEnvelope(tooDeep, 400, 'VALIDATION_ERROR');
    assert.equal(tooDeep.body.meta.issues, [{ path: '', message: 'arrays and objects may nest at most 64 levels deep' }]);

    // Half a MiB of "[" that is not even JSON: refused for its depth, so JSON.parse never ran on it.
    const admin = await roomy.admin();
    const flood = await call(roomy.url, 'POST', '/api/workspaces/nowhere/events/publish', {
      raw: `${'['.repeat(512 * 1024)}x`,
      token: admin.token,
      headers: { 'content-type': 'application/json' },
    });
    assertEnvelope(flood, 400, 'VALIDATION_ERROR');
    assert.match(flood.body.message ?? '', '64 levels');

    const padded = (bytes: number) => JSON.stringify({ email: 'nobody@example.test', password: 'x', pad: 'p'.repeat(bytes) });
    const large = await login(padded(9 * 1024));
    assertEnvelope(large, 413, 'PAYLOAD_TOO_LARGE');
    assert.is(large.body.meta.limit, 8192);
    const password = await call(roomy.url, 'PUT', '/api/auth/me/password', {
      raw: padded(9 * 1024),
      token: admin.token,
      headers: { 'content-type': 'application/json' },
    });
    assertEnvelope(password, 413, 'PAYLOAD_TOO_LARGE');
    assertEnvelope(await login(padded(4 * 1024)), 400, 'VALIDATION_ERROR');
  } finally {
    await roomy.destroy();
  }
});

/**
 * Starts a 4000-byte upload and disconnects after a quarter of it. The body is
 * sent once the daemon says 100 Continue, that is once the route has the request.
 */
function abandonUpload(url: string, path: string, token: string | null): Promise<void> {
  const { host, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      const auth = token ? `Authorization: Bearer ${token}\r\n` : '';
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n${auth}Content-Length: 4000\r\nExpect: 100-continue\r\n\r\n`);
    });
    socket.once('data', () => {
      socket.write(`{"a":"${'x'.repeat(1000)}`);
      setImmediate(() => socket.destroy());
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}

test('a client that disconnects mid-upload leaves no error and no stack in the log', async () => {
  const admin = await t.admin();
  const from = t.logs.length;
  const targets: [string, string | null][] = [
    ['/api/auth/login', null],
    ['/api/workspaces/nowhere/events/publish', admin.token],
  ];
  for (const [path, token] of targets) for (let i = 0; i < 3; i += 1) await abandonUpload(t.url, path, token);
  await waitFor('the access lines of the abandoned uploads', () => t.logs.slice(from).join('').split(' POST ').length > 6);
  assert.is((await t.anon.get('/api/health')).status, 200);
  const logged = t.logs.slice(from).join('');
  assert.not.match(logged, 'error:');
  assert.not.match(logged, /\n\s+at /);
});

test('a cross-site write with the session cookie is 403 before anything runs; Bearer and header-less calls pass', async () => {
  const trusted = 'https://console.example.test';
  const site = await startTestDaemon({ corsOrigins: [trusted] });
  try {
    const own = site.url;
    const admin = await site.admin();
    const victim = await createUser(site, 'victim@example.test');
    const withCookie = (token: string, headers: Record<string, string> = {}) => ({ headers: { cookie: `platform_token=${token}`, ...headers } });
    const hostile: Record<string, string>[] = [
      { origin: 'https://evil.example.test' },
      { origin: 'null' },
      { origin: own.replace('http:', 'https:') },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: own },
      { 'sec-fetch-site': 'cross-site', origin: trusted },
    ];
    for (const headers of hostile) {
      const label = JSON.stringify(headers);
      const logout = await call(own, 'POST', '/api/auth/logout', withCookie(victim.token, headers));
      assertEnvelope(logout, 403, 'FORBIDDEN');
      const password = await call(own, 'PUT', '/api/auth/me/password', {
        ...withCookie(victim.token, headers),
        json: { currentPassword: victim.password, newPassword: 'taken-over-1' },
      });
      assertEnvelope(password, 403, 'FORBIDDEN');
      const removal = await call(own, 'DELETE', `/api/admin/users/${victim.id}`, withCookie(admin.token, headers));
      assert.is(removal.status, 403, label);
      // Logging a browser into an account of the attacker's choosing is refused too, cookie or not.
      const login = await call(own, 'POST', '/api/auth/login', { json: ADMIN, headers });
      assert.is(login.status, 403, label);
      assert.is(login.headers.get('set-cookie'), null, label);
    }
    // Nothing happened: the victim's session and password are as they were, and reads are not writes.
    const me = await call(own, 'GET', '/api/auth/me', withCookie(victim.token, { origin: 'https://evil.example.test', 'sec-fetch-site': 'cross-site' }));
    assertEnvelope(me, 200, 'SUCCESS');
    assert.is((await call(own, 'POST', '/api/auth/login', { json: { email: 'victim@example.test', password: victim.password } })).status, 200);

    // Bearer, header-less calls, the daemon's own origin, a --cors-origin, and the webhook endpoint pass.
    const passing: [string, Record<string, string>][] = [
      ['no header', {}],
      ['own origin', { origin: own, 'sec-fetch-site': 'same-origin' }],
      ['own origin behind TLS', { origin: own.replace('http:', 'https:'), 'x-forwarded-proto': 'https' }],
      ['typed into the address bar', { 'sec-fetch-site': 'none' }],
      ['a --cors-origin', { origin: trusted }],
    ];
    for (const [what, headers] of passing) {
      const session = await site.as('victim@example.test', victim.password);
      const logout = await call(own, 'POST', '/api/auth/logout', withCookie(session.token, headers));
      assert.is(logout.status, 200, `${what}: ${logout.text}`);
    }
    const session = await site.as('victim@example.test', victim.password);
    const bearer = await call(own, 'POST', '/api/auth/logout', {
      token: session.token,
      headers: { cookie: `platform_token=${session.token}`, origin: 'https://evil.example.test', 'sec-fetch-site': 'cross-site' },
    });
    assert.is(bearer.status, 200, bearer.text);
    const webhook = await call(own, 'POST', '/api/webhooks/no-such-extension', { json: {}, headers: { origin: 'https://evil.example.test' } });
    assertEnvelope(webhook, 404, 'NOT_FOUND');
  } finally {
    await site.destroy();
  }
});

test('a preflight from a --cors-origin may ask for the request headers routes declare (Idempotency-Key)', async () => {
  const trusted = 'https://console.example.test';
  const site = await startTestDaemon({ corsOrigins: [trusted] });
  try {
    const preflight = await call(site.url, 'OPTIONS', '/api/workspaces/acme/events/publish', {
      headers: { origin: trusted, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
    });
    assert.is(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-headers')?.split(', '), ['authorization', 'content-type', 'idempotency-key']);
  } finally {
    await site.destroy();
  }
});

/** A GET with exactly the given Host header (none when undefined), over a raw connection. */
function getWithHost(url: string, path: string, host: string | undefined, version = '1.1'): Promise<{ status: number; envelope: any }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      const hostLine = host === undefined ? '' : `Host: ${host}\r\n`;
      socket.write(`GET ${path} HTTP/${version}\r\n${hostLine}Connection: close\r\n\r\n`);
    });
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.\d (\d{3})/.exec(received)?.[1] ?? 0);
      const body = received.slice(received.indexOf('\r\n\r\n') + 4);
      resolve({ status, envelope: body ? JSON.parse(body) : null });
    });
  });
}

test('on loopback only loopback host names are answered: any other Host is 421, unknown routes included', async () => {
  const { port } = new URL(t.url);
  for (const host of ['127.0.0.1', `127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST', `[::1]:${port}`]) {
    assert.is((await getWithHost(t.url, '/api/health', host)).status, 200, host);
  }
  for (const host of ['rebound.example.test', `rebound.example.test:${port}`, '127.0.0.1.nip.io', 'localhost.', '127.0.0.2', 'localhost:x', '']) {
    for (const path of ['/api/health', '/api/no-such-route']) {
      const answer = await getWithHost(t.url, path, host);
      assert.is(answer.status, 421, `${host} ${path}`);
      assert.is(answer.envelope.code, 'MISDIRECTED_REQUEST');
      assert.equal(Object.keys(answer.envelope), ['code', 'message', 'data', 'meta', 'timestamp']);
    }
  }
  const noHost = await getWithHost(t.url, '/api/health', undefined, '1.0');
  assert.is(noHost.status, 421, 'HTTP/1.0 without Host');
  // The refusal comes before anything else: a rebound page cannot even try a login.
  const login = await call(t.url, 'POST', '/api/auth/login', { json: { email: 'a@b', password: 'x' } });
  assert.is(login.status, 401, 'a loopback Host still logs in');
});

test('--allowed-hosts adds names on loopback, and turns the check on for other addresses', async () => {
  const named = await startTestDaemon({ allowedHosts: ['platform.example.test'] });
  try {
    for (const host of ['platform.example.test', 'PLATFORM.example.test:8443', 'localhost']) {
      assert.is((await getWithHost(named.url, '/api/health', host)).status, 200, host);
    }
    assert.is((await getWithHost(named.url, '/api/health', 'other.example.test')).status, 421);
  } finally {
    await named.destroy();
  }
  // The flag and its environment variable reach the daemon; a URL in their place is a usage error.
  const dataDir = await tempDir();
  const spawned = await spawnDaemon(dataDir, { PLATFORM_ALLOWED_HOSTS: 'env.example.test' }, ['--allowed-hosts', 'Flag.example.test, [::1]']);
  try {
    assert.is((await getWithHost(spawned.url, '/api/health', 'flag.example.test')).status, 200);
    assert.is((await getWithHost(spawned.url, '/api/health', 'env.example.test')).status, 421, 'the flag wins over the environment');
  } finally {
    spawned.child.kill('SIGTERM');
    await spawned.exited;
  }
  const misused = await runCli(['serve', '--port', '0', '--data-dir', dataDir, '--allowed-hosts', 'https://platform.example.test']);
  assert.is(misused.code, 2, misused.stderr);
  assert.match(misused.stderr, '--allowed-hosts');
  rmSync(dataDir, { recursive: true, force: true });

  const wildcard = await startTestDaemon({ host: '0.0.0.0' });
  try {
    assert.is((await getWithHost(wildcard.url, '/api/health', 'anything.example.test')).status, 200, 'no check off loopback by default');
  } finally {
    await wildcard.destroy();
  }
  const guarded = await startTestDaemon({ host: '0.0.0.0', allowedHosts: ['platform.example.test'] });
  try {
    assert.is((await getWithHost(guarded.url, '/api/health', 'platform.example.test')).status, 200);
    assert.is((await getWithHost(guarded.url, '/api/health', 'anything.example.test')).status, 421);
  } finally {
    await guarded.destroy();
  }
});

test('validation failures are 400 with meta.issues as dotted paths', async () => {
  const result = await t.anon.post('/api/auth/login', { email: 5 });
  assertEnvelope(result, 400, 'VALIDATION_ERROR');
  const paths = result.body.meta.issues.map((issue: { path: string }) => issue.path);
  assert.ok(paths.includes('email'), JSON.stringify(result.body.meta));
  assert.ok(paths.includes('password'), JSON.stringify(result.body.meta));
  for (const issue of result.body.meta.issues) assert.type(issue.message, 'string');
});

test('arrays, unknown fields and missing bodies are refused where an object is expected', async () => {
  assertEnvelope(await t.anon.post('/api/auth/login', [{ email: 'a@b', password: 'x' }]), 400, 'VALIDATION_ERROR');
  const extra = await t.anon.post('/api/auth/login', { email: 'a@b', password: 'x', admin: true });
  assertEnvelope(extra, 400, 'VALIDATION_ERROR');
  assert.is(extra.body.meta.issues[0].path, 'admin');
  const proto = await call(t.url, 'POST', '/api/auth/login', {
    raw: '{"email":"a@b","password":"x","__proto__":{"roles":["ADMIN"]}}',
    headers: { 'content-type': 'application/json' },
  });
  assertEnvelope(proto, 400, 'VALIDATION_ERROR');
  assertEnvelope(await call(t.url, 'POST', '/api/auth/login'), 400, 'VALIDATION_ERROR');
});

filesOnly(test)('an unexpected fault is 500 INTERNAL_ERROR without stack, path or detail, and is logged (files only: breaks a data file to cause the fault)', async () => {
  const admin = await t.admin();
  // Make the next users.json write fail: its temp file path is taken by a directory.
  const blocker = join(t.dataDir, 'users.json.tmp');
  mkdirSync(join(blocker, 'inside'), { recursive: true });
  try {
    const result = await admin.post('/api/admin/users', { email: 'fault@example.test', fullName: 'F', password: 'password-123' });
    assertEnvelope(result, 500, 'INTERNAL_ERROR');
    assert.is(result.body.message, 'internal error');
    assert.not.match(result.text, t.dataDir);
    assert.not.match(result.text, 'at ');
    assert.ok(t.logs.some((line) => line.includes('error:')), 'the fault is in the log');
  } finally {
    rmSync(blocker, { recursive: true });
  }
  const list = await admin.get('/api/admin/users');
  assert.not.ok(
    list.body.data.some((user: { email: string }) => user.email === 'fault@example.test'),
    'the failed write is not visible afterwards',
  );
});

test('an access log line per request: method, path, status, duration; never the query or a cookie', async () => {
  await call(t.url, 'GET', '/api/health?secret=hunter2', { headers: { cookie: 'platform_token=abc.def.ghi' } });
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const line = t.logs.join('').split('\n').find((entry) => entry.includes('GET /api/health 200'));
  assert.ok(line, 'an access line for the request');
  assert.match(line!, /^\S+Z GET \/api\/health 200 \d+\.\dms [0-9a-f]{12}-[0-9a-z]+$/);
  const everything = t.logs.join('');
  assert.not.match(everything, 'hunter2');
  assert.not.match(everything, 'abc.def.ghi');
});

test.run();
