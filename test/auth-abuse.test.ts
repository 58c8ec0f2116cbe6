import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnDaemon } from './helpers/cli.js';
import { ADMIN, createUser, startTestDaemon } from './helpers/daemon.js';
import { api, call, tokenOf, type HttpResult } from './helpers/http.js';
import { tempDir } from './helpers/temp.js';
import { filesOnly } from './helpers/postgres.js';

/**
 * Bcrypt at its real cost (10, ~70 ms a comparison), so that concurrent
 * attempts are really in flight together, as they are in production.
 */
const realCost = () => startTestDaemon({ bcryptCost: 10 });

/** A login from a chosen local address: the daemon listens on 127.0.0.1 and Linux routes all of 127/8 on lo. */
function loginFrom(url: string, localAddress: string, json: unknown): Promise<{ status: number; retryAfter: string | undefined; code: string }> {
  const body = JSON.stringify(json);
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/auth/login`,
      {
        method: 'POST',
        localAddress,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode!, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, code: text ? JSON.parse(text).code : '' });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const isRateLimited = (result: HttpResult) =>
  result.status === 429 && result.body.code === 'RATE_LIMITED' && Number(result.headers.get('retry-after')) >= 1;

test('a burst of concurrent wrong logins: at most 5 are compared (401), the rest and a right password at its end get 429', async () => {
  const t = await realCost();
  try {
    await createUser(t, 'burst@example.test', { password: 'right-password' });
    const attempt = (password: string) => t.anon.post('/api/auth/login', { email: 'burst@example.test', password });
    const burst = Array.from({ length: 20 }, () => attempt('wrong-password'));
    // Sent once the daemon has started answering the burst, while its comparisons may still run.
    await Promise.race(burst);
    const right = await attempt('right-password');
    const results = await Promise.all(burst);
    const compared = results.filter((result) => result.status === 401);
    assert.is(compared.length, 5, `statuses: ${results.map((result) => result.status).join(',')}`);
    assert.ok(results.every((result) => result.status === 401 || isRateLimited(result)), 'everything else is 429 with Retry-After');
    assert.ok(isRateLimited(right), `the right password at the end of the burst does not log in (${right.status})`);
    assert.is((await attempt('right-password')).status, 429, 'still locked afterwards');
  } finally {
    await t.destroy();
  }
});

test('the current-password check of a password change is throttled like a login, concurrent guesses included', async () => {
  const t = await realCost();
  try {
    const user = await createUser(t, 'stolen@example.test', { password: 'right-password' });
    const change = (currentPassword: string) => user.put('/api/auth/me/password', { currentPassword, newPassword: 'attacker-password' });
    const guesses = await Promise.all(Array.from({ length: 12 }, (_, i) => change(`guess-${i}-password`)));
    assert.is(guesses.filter((result) => result.status === 401).length, 5, `statuses: ${guesses.map((result) => result.status).join(',')}`);
    assert.ok(guesses.every((result) => result.status === 401 || isRateLimited(result)));
    const right = await change('right-password');
    assert.ok(isRateLimited(right), 'the right current password is refused too while throttled');
    assert.is((await t.anon.post('/api/auth/login', { email: 'stolen@example.test', password: 'right-password' })).status, 200, 'the password is unchanged');
  } finally {
    await t.destroy();
  }
});

test('disabling a user ends its tokens for good: they stay dead after re-enabling, new logins work', async () => {
  const t = await startTestDaemon();
  try {
    const user = await createUser(t, 'revived@example.test');
    const admin = await t.admin();
    assert.is((await admin.patch(`/api/admin/users/${user.id}`, { active: false })).status, 200);
    assert.is((await user.get('/api/auth/me')).body.code, 'ACCOUNT_DISABLED');
    assert.is((await admin.patch(`/api/admin/users/${user.id}`, { active: true })).status, 200);
    const old = await user.get('/api/auth/me');
    assert.is(old.status, 401, 'the token issued before the user was disabled');
    assert.is(old.body.code, 'UNAUTHORIZED');
    const fresh = await t.as('revived@example.test', user.password);
    assert.is((await fresh.get('/api/auth/me')).status, 200);
    assert.is((await admin.patch(`/api/admin/users/${user.id}`, { fullName: 'Still Active' })).status, 200);
    assert.is((await fresh.get('/api/auth/me')).status, 200, 'other changes to the user end no session');
  } finally {
    await t.destroy();
  }
});

test('a flood of logins with random e-mails from one address does not keep another address from logging in', async () => {
  const t = await realCost();
  try {
    const flood = Array.from({ length: 400 }, () =>
      loginFrom(t.url, '127.0.0.1', { email: `${randomUUID()}@example.test`, password: 'guess-password' }),
    );
    // Sent once the daemon has started answering the flood: the flood's attempts are in flight.
    await Promise.race(flood);
    const legitimate = await loginFrom(t.url, '127.0.0.2', ADMIN);
    const answers = await Promise.all(flood);
    assert.is(legitimate.status, 200, `the other address got ${legitimate.status} ${legitimate.code}`);
    assert.ok(answers.every((answer) => answer.status === 401 || answer.status === 429), `flood statuses: ${[...new Set(answers.map((answer) => answer.status))]}`);
    const limited = answers.filter((answer) => answer.status === 429);
    assert.ok(limited.length > 0, 'the flood is cut off');
    assert.ok(limited.every((answer) => answer.code === 'RATE_LIMITED' && Number(answer.retryAfter) >= 1));
    assert.is((await loginFrom(t.url, '127.0.0.1', ADMIN)).status, 200, 'the budget is given back once the flood is over');
  } finally {
    await t.destroy();
  }
});

filesOnly(test)('revocations are appended to revocations.log, not rewritten; expired ones are compacted away (files only: reads revocations.log)', async () => {
  const t = await startTestDaemon();
  try {
    const sessions = await Promise.all([1, 2, 3].map(() => t.as(ADMIN.email, ADMIN.password)));
    for (const session of sessions) assert.is((await session.post('/api/auth/logout')).status, 200);
    assert.not.ok(existsSync(join(t.dataDir, 'revocations.json')));
    const lines = () => readFileSync(join(t.dataDir, 'revocations.log'), 'utf8').split('\n').filter(Boolean);
    assert.equal(
      lines().map((line) => JSON.parse(line).jti),
      sessions.map((session) => decodeJwt(session.token).jti),
    );
    const tokens = t.daemon.services.auth.tokens;
    await tokens.revoke({ sub: 'x', jti: 'long-expired', tv: 0, iat: 1, exp: 2 });
    assert.is(lines().length, 4);
    assert.is(await tokens.pruneExpired(), 1);
    assert.is(lines().length, 3, 'the expired revocation is gone from the file');
    for (const session of sessions) assert.is((await session.get('/api/auth/me')).status, 401);
  } finally {
    await t.destroy();
  }
});

filesOnly(test)('a data directory with revocations.json is migrated to the log on start, and its revocations hold (files only: migrates a file of the data directory)', async () => {
  const t = await startTestDaemon();
  const revoked = await t.as(ADMIN.email, ADMIN.password);
  const kept = await t.as(ADMIN.email, ADMIN.password);
  await t.stop();
  const claims = decodeJwt(revoked.token);
  const legacy = join(t.dataDir, 'revocations.json');
  writeFileSync(legacy, JSON.stringify({ schemaVersion: 1, revoked: { [claims.jti!]: claims.exp, 'old-expired': 2 } }), { mode: 0o600 });
  const restarted = await startTestDaemon({}, t.dataDir);
  try {
    assert.is((await api(restarted.url, revoked.token).get('/api/auth/me')).status, 401, 'revoked before the upgrade, still revoked');
    assert.is((await api(restarted.url, kept.token).get('/api/auth/me')).status, 200);
    assert.not.ok(existsSync(legacy), 'the old file is removed');
    const log = readFileSync(join(t.dataDir, 'revocations.log'), 'utf8');
    assert.match(log, claims.jti!);
    assert.not.match(log, 'old-expired', 'expired revocations are not carried over');
  } finally {
    await restarted.destroy();
  }
});

test('an acknowledged logout survives SIGKILL', async () => {
  const dir = await tempDir();
  const env = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password };
  const daemon = await spawnDaemon(dir, env);
  const session = tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN }));
  assert.is((await api(daemon.url, session).post('/api/auth/logout')).status, 200);
  daemon.child.kill('SIGKILL');
  assert.is(await daemon.exited, 'SIGKILL');
  const restarted = await spawnDaemon(dir, env);
  try {
    assert.is((await api(restarted.url, session).get('/api/auth/me')).status, 401);
  } finally {
    restarted.child.kill('SIGTERM');
    await restarted.exited;
  }
});

test.run();
