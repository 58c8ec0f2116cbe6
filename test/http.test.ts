import { mkdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { call, type HttpResult } from './helpers/http.js';

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
  assertEnvelope(await t.anon.get('/'), 404, 'NOT_FOUND');
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

test('an unexpected fault is 500 INTERNAL_ERROR without stack, path or detail, and is logged', async () => {
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
