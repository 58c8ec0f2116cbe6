import { readFileSync, statSync } from 'node:fs';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { api, call, tokenOf } from './helpers/http.js';
import { TEST_BACKEND } from './helpers/postgres.js';

let t: TestDaemon;
const SIGNING_KEY = 'a-test-signing-key-of-at-least-32-bytes';

test.before(async () => {
  // The signing key is given, so that tokens can be forged with it on both backends (on PostgreSQL it is not a file).
  t = await startTestDaemon({ jwtSecret: SIGNING_KEY });
});
test.after(async () => {
  await t.destroy();
});

const login = (email: string, password: string) => t.anon.post('/api/auth/login', { email, password });
const jwtSecret = () => Buffer.from(SIGNING_KEY);

async function forge(claims: Record<string, unknown>, options: { key?: Uint8Array; exp?: number; nbf?: number } = {}) {
  const now = Math.floor(Date.now() / 1000);
  let jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt(now).setExpirationTime(options.exp ?? now + 600);
  if (options.nbf) jwt = jwt.setNotBefore(options.nbf);
  return jwt.sign(options.key ?? jwtSecret());
}

test('login answers the User and sets the session cookie with the contract attributes', async () => {
  const result = await login(ADMIN.email, ADMIN.password);
  assert.is(result.status, 200);
  assert.equal(Object.keys(result.body.data).sort(), ['active', 'email', 'fullName', 'id', 'roles']);
  assert.equal(result.body.data.roles, ['ADMIN']);
  const cookie = result.headers.getSetCookie().find((value) => value.startsWith('platform_token='))!;
  assert.ok(cookie, 'a platform_token cookie');
  for (const attribute of ['HttpOnly', 'SameSite=Lax', 'Path=/', 'Max-Age=28800']) assert.match(cookie, attribute);
  assert.not.match(cookie, 'Secure');
  assert.not.match(cookie, 'Domain');
  assert.not.ok(result.headers.getSetCookie().some((value) => value.startsWith('__Host-')), 'the plain name without TLS');
  assert.not.match(result.text, ADMIN.password);
});

test('e-mails are matched case-insensitively at login', async () => {
  const result = await login(ADMIN.email.toUpperCase(), ADMIN.password);
  assert.is(result.status, 200);
});

test('a wrong password and an unknown e-mail get the same 401 INVALID_CREDENTIALS', async () => {
  const wrong = await login(ADMIN.email, 'not-the-password');
  const unknown = await login('nobody@example.test', 'not-the-password');
  for (const result of [wrong, unknown]) {
    assert.is(result.status, 401);
    assert.is(result.body.code, 'INVALID_CREDENTIALS');
  }
  assert.is(wrong.body.message, unknown.body.message);
});

test('the session works as a cookie and as a bearer token; without one it is 401 UNAUTHORIZED', async () => {
  const token = tokenOf(await login(ADMIN.email, ADMIN.password));
  const byCookie = await call(t.url, 'GET', '/api/auth/me', { headers: { cookie: `other=1; platform_token=${token}` } });
  assert.is(byCookie.status, 200);
  assert.is(byCookie.body.data.email, ADMIN.email);
  const byBearer = await api(t.url, token).get('/api/auth/me');
  assert.is(byBearer.status, 200);
  const anonymous = await t.anon.get('/api/auth/me');
  assert.is(anonymous.status, 401);
  assert.is(anonymous.body.code, 'UNAUTHORIZED');
});

test('forged, expired, not-yet-valid and alg=none tokens are 401', async () => {
  const admin = await t.admin();
  const me = (await admin.get('/api/auth/me')).body.data;
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: me.id, jti: 'forged-1', tv: 0 };
  const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ ...claims, iat: now, exp: now + 600 })).toString('base64url');
  const cases: Record<string, string> = {
    'alg none': `${header}.${payload}.`,
    'wrong key': await forge(claims, { key: Buffer.alloc(32, 7) }),
    expired: await forge(claims, { exp: now - 10 }),
    'not yet valid': await forge(claims, { nbf: now + 3600 }),
    garbage: 'not-a-jwt',
  };
  for (const [name, token] of Object.entries(cases)) {
    const result = await api(t.url, token).get('/api/auth/me');
    assert.is(result.status, 401, name);
    assert.is(result.body.code, 'UNAUTHORIZED', name);
  }
  const control = await api(t.url, await forge(claims)).get('/api/auth/me');
  assert.is(control.status, 200, 'a token signed with the daemon secret is accepted, so the cases above test what they say');
});

test('roles and active are read from storage on every request, not trusted from the token', async () => {
  const user = await createUser(t, 'promoted@example.test');
  assert.is((await user.get('/api/admin/users')).status, 403);
  const admin = await t.admin();
  await admin.patch(`/api/admin/users/${user.id}`, { roles: ['ADMIN', 'USER'] });
  assert.is((await user.get('/api/admin/users')).status, 200, 'same token, new role');
  await admin.patch(`/api/admin/users/${user.id}`, { roles: ['USER'] });
  assert.is((await user.get('/api/admin/users')).status, 403);
});

test('logout clears the cookie and revokes that token only, and the revocation survives a restart', async () => {
  const first = await t.as(ADMIN.email, ADMIN.password);
  const second = await t.as(ADMIN.email, ADMIN.password);
  const result = await first.post('/api/auth/logout');
  assert.is(result.status, 200);
  assert.is(result.body.data, null);
  const cleared = result.headers.getSetCookie().find((value) => value.startsWith('platform_token='))!;
  assert.match(cleared, 'Max-Age=0');
  assert.is((await first.get('/api/auth/me')).status, 401);
  assert.is((await second.get('/api/auth/me')).status, 200);

  t = await t.restart();
  assert.is((await api(t.url, first.token).get('/api/auth/me')).status, 401, 'still revoked after a restart');
  assert.is((await api(t.url, second.token).get('/api/auth/me')).status, 200, 'other sessions survive a restart');
});

test('expired revocations are pruned', async () => {
  const tokens = t.daemon.services.auth.tokens;
  await tokens.revoke({ sub: 'x', jti: 'long-expired', tv: 0, iat: 1, exp: 2 });
  assert.ok((await tokens.pruneExpired()) >= 1);
  assert.is(await tokens.pruneExpired(), 0, 'nothing left to prune');
});

test('password change: wrong current password 401, rules 400, success ends every other session', async () => {
  const user = await createUser(t, 'changer@example.test', { password: 'first-password' });
  const other = await t.as('changer@example.test', 'first-password');
  const change = (currentPassword: string, newPassword: string) =>
    user.put('/api/auth/me/password', { currentPassword, newPassword });

  const wrong = await change('not-it-at-all', 'second-password');
  assert.is(wrong.status, 401);
  assert.is(wrong.body.code, 'INVALID_CREDENTIALS');
  for (const [newPassword, why] of [
    ['short', 'under 8 bytes'],
    ['é'.repeat(37), '74 UTF-8 bytes'],
    ['first-password', 'same as the current one'],
  ] as const) {
    const result = await change('first-password', newPassword);
    assert.is(result.status, 400, why);
    assert.is(result.body.code, 'VALIDATION_ERROR', why);
    assert.is(result.body.meta.issues[0].path, 'newPassword', why);
  }
  const longest = await change('first-password', 'é'.repeat(36));
  assert.is(longest.status, 200, '72 UTF-8 bytes is allowed');
  const fresh = tokenOf(longest);
  assert.is((await api(t.url, fresh).get('/api/auth/me')).status, 200, 'the fresh cookie works');
  assert.is((await user.get('/api/auth/me')).status, 401, 'the old token of the caller is ended');
  assert.is((await other.get('/api/auth/me')).status, 401, 'other sessions are ended');

  const second = await api(t.url, fresh).put('/api/auth/me/password', {
    currentPassword: 'é'.repeat(36),
    newPassword: 'second-password',
  });
  assert.is(second.status, 200);
  assert.is((await login('changer@example.test', 'first-password')).status, 401);
  assert.is((await login('changer@example.test', 'second-password')).status, 200);
});

test('five failed logins from one address lock that e-mail out with 429 and Retry-After', async () => {
  await createUser(t, 'throttled@example.test', { password: 'right-password' });
  for (let i = 0; i < 5; i += 1) assert.is((await login('throttled@example.test', 'wrong-password')).status, 401);
  const locked = await login('throttled@example.test', 'right-password');
  assert.is(locked.status, 429);
  assert.is(locked.body.code, 'RATE_LIMITED');
  const retryAfter = Number(locked.headers.get('retry-after'));
  assert.ok(retryAfter > 800 && retryAfter <= 900, `Retry-After ${retryAfter}`);
  assert.is((await login(ADMIN.email, ADMIN.password)).status, 200, 'other accounts are not affected');
});

test('a successful login resets the failure count', async () => {
  await createUser(t, 'forgetful@example.test', { password: 'right-password' });
  for (let i = 0; i < 4; i += 1) await login('forgetful@example.test', 'wrong-password');
  assert.is((await login('forgetful@example.test', 'right-password')).status, 200);
  for (let i = 0; i < 4; i += 1) await login('forgetful@example.test', 'wrong-password');
  assert.is((await login('forgetful@example.test', 'right-password')).status, 200);
});

test('user administration: create, list, patch; duplicates are 409 whatever the case', async () => {
  const admin = await t.admin();
  const created = await admin.post('/api/admin/users', { email: 'Dana@Example.test', fullName: 'Dana', password: 'dana-password' });
  assert.is(created.status, 201);
  assert.equal(created.body.data.roles, ['USER']);
  assert.is(created.body.data.active, true);
  const duplicate = await admin.post('/api/admin/users', { email: 'dana@example.TEST', fullName: 'D', password: 'dana-password' });
  assert.is(duplicate.status, 409);
  assert.is(duplicate.body.code, 'CONFLICT');

  const list = await admin.get('/api/admin/users');
  const dana = list.body.data.find((user: { email: string }) => user.email === 'Dana@Example.test');
  assert.ok(dana);
  assert.not.match(list.text, 'passwordHash');
  assert.not.match(list.text, '$2');

  const patched = await admin.patch(`/api/admin/users/${dana.id}`, { fullName: 'Dana Scully', roles: ['USER', 'ADMIN'] });
  assert.is(patched.status, 200);
  assert.equal(patched.body.data, { ...dana, fullName: 'Dana Scully', roles: ['USER', 'ADMIN'] });
  assert.is((await admin.patch(`/api/admin/users/${dana.id}`, {})).status, 400, 'an empty patch');
});

test('a disabled account gets 403 ACCOUNT_DISABLED on every request and at login; enabling restores the login', async () => {
  const user = await createUser(t, 'disabled@example.test');
  const admin = await t.admin();
  assert.is((await admin.patch(`/api/admin/users/${user.id}`, { active: false })).status, 200);
  const request = await user.get('/api/auth/me');
  assert.is(request.status, 403);
  assert.is(request.body.code, 'ACCOUNT_DISABLED');
  const again = await login('disabled@example.test', user.password);
  assert.is(again.status, 403);
  assert.is(again.body.code, 'ACCOUNT_DISABLED');
  const wrongPassword = await login('disabled@example.test', 'wrong-password');
  assert.is(wrongPassword.body.code, 'INVALID_CREDENTIALS', 'a guesser learns nothing about the account');
  await admin.patch(`/api/admin/users/${user.id}`, { active: true });
  assert.is((await login('disabled@example.test', user.password)).status, 200);
});

test('the last active administrator cannot be disabled, demoted or deleted', async () => {
  const lone = await startTestDaemon();
  try {
    const admin = await lone.admin();
    const me = (await admin.get('/api/auth/me')).body.data;
    for (const patch of [{ active: false }, { roles: ['USER'] }]) {
      const result = await admin.patch(`/api/admin/users/${me.id}`, patch);
      assert.is(result.status, 409, JSON.stringify(patch));
    }
    assert.is((await admin.delete(`/api/admin/users/${me.id}`)).status, 409);
    assert.is((await admin.get('/api/auth/me')).status, 200);
  } finally {
    await lone.destroy();
  }
});

test('a deleted user is gone: 204, then its token is 401 and it cannot log in', async () => {
  const user = await createUser(t, 'deleted@example.test');
  const admin = await t.admin();
  const removed = await admin.delete(`/api/admin/users/${user.id}`);
  assert.is(removed.status, 204);
  assert.is(removed.text, '');
  const after = await user.get('/api/auth/me');
  assert.is(after.status, 401);
  assert.is(after.body.code, 'UNAUTHORIZED');
  assert.is((await login('deleted@example.test', user.password)).status, 401);
  assert.is((await admin.delete(`/api/admin/users/${user.id}`)).status, 404);
});

test('check order on a protected route: 401, then 403, then 400, then 404', async () => {
  const user = await createUser(t, 'order@example.test');
  const admin = await t.admin();
  const unknownId = '00000000-0000-4000-8000-000000000000';
  const invalid = { roles: ['EMPEROR'] };
  assert.is((await t.anon.patch(`/api/admin/users/${unknownId}`, invalid)).status, 401);
  assert.is((await user.patch(`/api/admin/users/${unknownId}`, invalid)).status, 403);
  assert.is((await admin.patch(`/api/admin/users/${unknownId}`, invalid)).status, 400);
  assert.is((await admin.patch('/api/admin/users/not-a-uuid', { fullName: 'X' })).status, 400, 'an invalid path parameter');
  const missing = await admin.patch(`/api/admin/users/${unknownId}`, { fullName: 'X' });
  assert.is(missing.status, 404);
  assert.is(missing.body.code, 'NOT_FOUND');
});

test('behind TLS (--secure-cookies) the session cookie is __Host-platform_token, Secure, Path=/, without Domain, and only that name is read', async () => {
  const secure = await startTestDaemon({ secureCookies: true });
  try {
    const result = await secure.anon.post('/api/auth/login', ADMIN);
    const [cookie, ...others] = result.headers.getSetCookie();
    assert.is(others.length, 0);
    assert.match(cookie!, /^__Host-platform_token=[^;]+;/);
    for (const attribute of ['Secure', 'Path=/', 'HttpOnly', 'SameSite=Lax', 'Max-Age=28800']) assert.match(cookie!, attribute);
    assert.not.match(cookie!, 'Domain');
    const token = tokenOf(result);

    const me = (cookieHeader: string) => call(secure.url, 'GET', '/api/auth/me', { headers: { cookie: cookieHeader } });
    assert.is((await me(`other=1; __Host-platform_token=${token}`)).status, 200, 'the name it sets is accepted');
    assert.is((await me(`platform_token=${token}`)).status, 401, 'the plain name, which any subdomain could set, is not');

    const document = JSON.parse((await secure.anon.get('/api/openapi.json')).text);
    assert.is(document.components.securitySchemes.cookie.name, '__Host-platform_token');

    const changed = await call(secure.url, 'PUT', '/api/auth/me/password', {
      json: { currentPassword: ADMIN.password, newPassword: 'admin-password-2' },
      headers: { cookie: `__Host-platform_token=${token}` },
    });
    assert.is(changed.status, 200, changed.text);
    const fresh = changed.headers.getSetCookie()[0]!;
    assert.match(fresh, /^__Host-platform_token=[^;]+;.*Secure/);
    const logout = await call(secure.url, 'POST', '/api/auth/logout', { headers: { cookie: fresh.split(';')[0]! } });
    assert.is(logout.status, 200, logout.text);
    assert.match(logout.headers.getSetCookie()[0]!, /^__Host-platform_token=;.*Max-Age=0.*Secure/);

    // The CLI takes its session from the prefixed cookie too.
    const config = await tempDir('platform-cli-');
    const login = await runCli(['login', '--email', ADMIN.email, '--password-stdin'], {
      input: 'admin-password-2\n',
      env: { XDG_CONFIG_HOME: config, PLATFORM_URL: secure.url },
    });
    assert.is(login.code, 0, login.stderr);
    const whoami = await runCli(['whoami'], { env: { XDG_CONFIG_HOME: config, PLATFORM_URL: secure.url } });
    assert.match(whoami.stdout, ADMIN.email);
  } finally {
    await secure.destroy();
  }
});

test('without bootstrap credentials the first start creates admin@localhost with a random password, once (on files its stored hash is read from users.json)', async () => {
  const fresh = await startTestDaemon({ bootstrapAdmin: null, bcryptCost: 10 });
  try {
    const file = join(fresh.dataDir, 'initial-admin-password');
    const password = readFileSync(file, 'utf8').trim();
    assert.ok(password.length >= 20);
    assert.is(statSync(file).mode & 0o777, 0o600);
    assert.is(fresh.logs.join('').split(password).length - 1, 1, 'the password is printed exactly once');
    assert.is((await fresh.anon.post('/api/auth/login', { email: 'admin@localhost', password })).status, 200);
    if (TEST_BACKEND === 'files') {
      const users = JSON.parse(readFileSync(join(fresh.dataDir, 'users.json'), 'utf8'));
      assert.match(users.users[0].passwordHash, /^\$2[aby]\$10\$/, 'bcrypt cost 10 by default');
      assert.not.match(JSON.stringify(users), password);
    }

    const again = await fresh.restart();
    assert.not.match(again.logs.join(''), password, 'not printed on later starts');
    await again.stop();
  } finally {
    await fresh.destroy().catch(() => undefined);
  }
});

test.run();
