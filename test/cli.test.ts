import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { closedPort } from './helpers/ports.js';
import { tempDir } from './helpers/temp.js';
import { runCli } from './helpers/cli.js';
import { api } from './helpers/http.js';

let t: TestDaemon;
let config: string;

test.before(async () => {
  t = await startTestDaemon();
  config = await tempDir('platform-cli-');
});
test.after(async () => {
  await t.destroy();
});

/** The CLI against the test daemon, with its own config directory (session file). */
const cli = (args: string[], options: { input?: string; env?: Record<string, string> } = {}) =>
  runCli(args, { input: options.input, env: { XDG_CONFIG_HOME: config, PLATFORM_URL: t.url, ...options.env } });

const sessionFile = () => join(config, 'platform', 'session.json');

test('--help answers at once with exit 0; an unknown command is a usage error (2)', async () => {
  const help = await cli(['--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, 'Usage: platform');
  const unknown = await cli(['frobnicate']);
  assert.is(unknown.code, 2);
});

test('login with --password-stdin keeps the session in a 0600 file under XDG_CONFIG_HOME', async () => {
  const result = await cli(['login', '--email', ADMIN.email, '--password-stdin'], { input: `${ADMIN.password}\n` });
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, `logged in to ${t.url} as ${ADMIN.email}`);
  assert.is(statSync(sessionFile()).mode & 0o777, 0o600);
  assert.is(statSync(join(config, 'platform')).mode & 0o777, 0o700);
  const session = JSON.parse(readFileSync(sessionFile(), 'utf8'));
  assert.is(session.url, t.url);
  assert.is((await api(t.url, session.token).get('/api/auth/me')).status, 200, 'the stored token is a live session');
});

test('whoami prints the user; --json prints the envelope data', async () => {
  const text = await cli(['whoami']);
  assert.is(text.code, 0, text.stderr);
  assert.match(text.stdout, `${ADMIN.email} (Administrator), roles: ADMIN`);
  const json = await cli(['whoami', '--json']);
  const user = JSON.parse(json.stdout);
  assert.is(user.email, ADMIN.email);
  assert.equal(user.roles, ['ADMIN']);
});

test('without a terminal, missing input is a usage error (2), never a silent success', async () => {
  const noEmail = await cli(['login', '--password-stdin'], { input: 'x' });
  assert.is(noEmail.code, 2);
  assert.match(noEmail.stderr, 'missing --email');
  const noPassword = await cli(['login', '--email', ADMIN.email]);
  assert.is(noPassword.code, 2);
  assert.match(noPassword.stderr, '--password-stdin');
});

test('an error answer prints its message and exits 1; an unreachable daemon exits 3', async () => {
  const wrong = await cli(['login', '--email', ADMIN.email, '--password-stdin'], {
    input: 'wrong-password',
    env: { XDG_CONFIG_HOME: await tempDir() },
  });
  assert.is(wrong.code, 1);
  assert.match(wrong.stderr, 'invalid e-mail or password');
  const port = await closedPort();
  const unreachable = await cli(['whoami'], { env: { PLATFORM_URL: `http://127.0.0.1:${port}` } });
  assert.is(unreachable.code, 3);
  assert.match(unreachable.stderr, `cannot reach the platform daemon at http://127.0.0.1:${port} (ECONNREFUSED)`);
});

test('users add, list, disable and enable', async () => {
  const add = await cli(['users', 'add', '--email', 'cli-user@example.test', '--full-name', 'Cli User', '--password-stdin'], {
    input: 'cli-user-password\n',
  });
  assert.is(add.code, 0, add.stderr);
  assert.match(add.stdout, 'created cli-user@example.test (USER)');

  const list = JSON.parse((await cli(['users', 'list', '--json'])).stdout);
  const created = list.find((user: { email: string }) => user.email === 'cli-user@example.test');
  assert.is(created.active, true);
  const table = await cli(['users', 'list']);
  assert.match(table.stdout, /EMAIL\s+NAME\s+ROLES\s+ACTIVE\s+ID/);
  assert.match(table.stdout, /cli-user@example\.test\s+Cli User\s+USER\s+yes/);

  assert.is((await cli(['users', 'disable', 'CLI-USER@example.test'])).code, 0);
  const disabled = await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' });
  assert.is(disabled.body.code, 'ACCOUNT_DISABLED');
  assert.is((await cli(['users', 'enable', created.id])).code, 0);
  const enabled = await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' });
  assert.is(enabled.status, 200);
  const missing = await cli(['users', 'disable', 'nobody@example.test']);
  assert.is(missing.code, 1);
});

test('passwd changes the password and keeps the CLI session working with the fresh token', async () => {
  const own = { XDG_CONFIG_HOME: await tempDir() };
  await cli(['login', '--email', 'cli-user@example.test', '--password-stdin'], { input: 'cli-user-password', env: own });
  const changed = await cli(['passwd', '--password-stdin'], { input: 'cli-user-password\nnew-cli-password\n', env: own });
  assert.is(changed.code, 0, changed.stderr);
  assert.is((await cli(['whoami'], { env: own })).code, 0, 'the session was updated with the fresh token');
  const old = await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' });
  assert.is(old.status, 401);
  const tooShort = await cli(['passwd', '--password-stdin'], { input: 'new-cli-password\nshort\n', env: own });
  assert.is(tooShort.code, 1);
  assert.match(tooShort.stderr, 'newPassword');
});

test('PLATFORM_TOKEN overrides the session; a saved token is never sent to another URL', async () => {
  const session = JSON.parse(readFileSync(sessionFile(), 'utf8'));
  const other = await startTestDaemon();
  try {
    const elsewhere = await cli(['whoami'], { env: { PLATFORM_URL: other.url } });
    assert.is(elsewhere.code, 1);
    assert.match(elsewhere.stderr, 'authentication required');
    const token = (await other.admin()).token;
    const overridden = await cli(['whoami', '--json'], { env: { PLATFORM_URL: other.url, PLATFORM_TOKEN: token } });
    assert.is(JSON.parse(overridden.stdout).email, ADMIN.email);
  } finally {
    await other.destroy();
  }
  assert.is(JSON.parse(readFileSync(sessionFile(), 'utf8')).token, session.token);
});

test('logout ends the session on the daemon and forgets it locally', async () => {
  const token = JSON.parse(readFileSync(sessionFile(), 'utf8')).token;
  const result = await cli(['logout']);
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, `logged out ${ADMIN.email}`);
  assert.is((await api(t.url, token).get('/api/auth/me')).status, 401, 'the token is revoked');
  const after = await cli(['whoami']);
  assert.is(after.code, 1);
});

test('init creates the first administrator of a data directory, once', async () => {
  const dir = join(await tempDir(), 'data');
  const init = await runCli(['init', '--data-dir', dir, '--email', 'owner@example.test', '--password-stdin'], {
    input: 'owner-password',
    env: { PLATFORM_BCRYPT_COST: '4' },
  });
  assert.is(init.code, 0, init.stderr);
  assert.match(init.stdout, 'administrator owner@example.test created');
  const again = await runCli(['init', '--data-dir', dir, '--email', 'x@example.test', '--password-stdin'], { input: 'whatever-password' });
  assert.is(again.code, 1);
  assert.match(again.stderr, 'already has users');

  const daemon = await startTestDaemon({ bootstrapAdmin: null }, dir);
  try {
    const login = await daemon.anon.post('/api/auth/login', { email: 'owner@example.test', password: 'owner-password' });
    assert.is(login.status, 200);
    assert.equal(login.body.data.roles, ['ADMIN']);
  } finally {
    await daemon.stop();
  }
  const weak = await runCli(['init', '--data-dir', join(dir, 'other'), '--email', 'a@b', '--password-stdin'], { input: 'short' });
  assert.is(weak.code, 2);
});

test.run();
