import { readFileSync, statSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { closedPort } from './helpers/ports.js';
import { tempDir } from './helpers/temp.js';
import { runCli, runCliOnTty } from './helpers/cli.js';
import { api } from './helpers/http.js';
import { filesOnly } from './helpers/postgres.js';

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

test('--version and -V print the version; `help A B` is the help of A B; an unknown option is one line and a hint', async () => {
  const version = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
  for (const flag of ['--version', '-V']) {
    const result = await cli([flag]);
    assert.is(result.code, 0);
    assert.is(result.stdout, `${version}\n`);
  }
  assert.match((await cli(['--help'])).stdout, /-V, --version\s+print the version/);
  const publishVersion = await cli(['ext', 'publish', '--version', '1.0.0'], { env: { PLATFORM_URL: 'http://127.0.0.1:1' } });
  assert.not.match(publishVersion.stdout, version, "a subcommand's own --version is not the program's");
  const help = await cli(['help', 'events', 'publish']);
  assert.is(help.code, 0);
  assert.match(help.stdout, 'Usage: platform events publish [options] <workspace> <eventKey>');
  assert.is((await cli(['help', 'events', 'nosuch'])).code, 2);

  const unknown = await cli(['events', 'publish', 'acme', 'a.b', '--foo']);
  assert.is(unknown.code, 2);
  assert.is(unknown.stderr, "error: unknown option '--foo'\n(run 'platform events publish --help')\n");
  const bogus = await cli(['bogus']);
  assert.is(bogus.code, 2);
  assert.is(bogus.stderr, "error: unknown command 'bogus'\n(run 'platform --help')\n", 'no suggestion of an unrelated command');
});

/** Every command path below `path`, read from the help output. */
async function commandsBelow(path: string[]): Promise<string[][]> {
  assert.ok(path.length <= 3, `help ${path.join(' ')}: the help of a nested command must not repeat its parent's`);
  const { stdout } = await cli(['help', ...path]);
  const section = /\nCommands:\n([\s\S]*?)(\n\n|$)/.exec(stdout)?.[1] ?? '';
  const names = [...section.matchAll(/^  (\S+)/gm)].map((match) => match[1]!).filter((name) => name !== 'help');
  const below = await Promise.all(names.map((name) => commandsBelow([...path, name])));
  return [path, ...below.flat()];
}

test("every command's help ends with an example; required options say so", async () => {
  const paths = await commandsBelow([]);
  assert.ok(paths.length > 40, `found ${paths.length} commands`);
  for (const path of paths) {
    const { stdout } = await cli([...path, '--help']);
    if (/\nCommands:\n/.test(stdout) && path.length > 0) continue;
    assert.match(stdout, /\nExamples?:\n( {2}\$ .*platform.*\n)+$/, `platform ${path.join(' ')} --help ends with an example`);
  }
  assert.match((await cli(['workspaces', 'create', '--help'])).stdout, /--name <name>\s+display name \(required\)/);
});

test('bad flag values and a malformed PLATFORM_URL are usage errors (2) that name the flag, found before any request', async () => {
  let connections = 0;
  const listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  try {
    const cases: Array<[string[], string]> = [
      [['dlq', 'list', '--limit', 'abc'], "option '--limit <n>' argument 'abc' is invalid. must be a whole number from 1 to 500"],
      [['dlq', 'list', '--limit', '501'], 'must be from 1 to 500'],
      [['events', 'list', 'acme', '--limit', '1001'], 'must be from 1 to 1000'],
      [['users', 'add', '--email', 'x@example.test', '--full-name', 'X', '--role', 'SUPERUSER', '--password-stdin'], "option '--role <role...>' argument 'SUPERUSER' is invalid. must be ADMIN or USER"],
      [['events', 'publish', 'acme', 'a.b', '--payload', '[1,2]'], "option '--payload <json>' argument '[1,2]' is invalid. must be a JSON object"],
      [['events', 'publish', 'acme', 'a.b', '--payload', '{nope'], 'is not valid JSON'],
      [['ext', 'config', 'set', 'weather', 'units', 'x', '--type', 'DATE'], "option '--type <type>'"],
      [['--timeout', 'soon', 'whoami'], "option '--timeout <seconds>'"],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args, { env: { PLATFORM_URL: url }, input: 'a-long-password' });
      assert.is(result.code, 2, `platform ${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
    for (const bad of ['nope', 'ftp://127.0.0.1', 'http://']) {
      const result = await cli(['whoami'], { env: { PLATFORM_URL: bad } });
      assert.is(result.code, 2, bad);
      assert.match(result.stderr, `PLATFORM_URL must be an http(s) URL such as http://127.0.0.1:8080, not ${JSON.stringify(bad)}`);
    }
    assert.is((await cli(['whoami', '--url', 'localhost:8080'])).code, 2);
    assert.is(connections, 0, 'no request was sent');
  } finally {
    await new Promise((resolve) => listener.close(resolve));
  }
});

test('a daemon that accepts and never answers: "no answer from URL in N s" (exit 3), N from --timeout', async () => {
  const sockets: Socket[] = [];
  const silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  try {
    const result = await cli(['--timeout', '1', 'whoami'], { env: { PLATFORM_URL: url } });
    assert.is(result.code, 3);
    assert.is(result.stderr, `platform: no answer from ${url} in 1 s (see --timeout)\n`);
    assert.is(sockets.length, 1, 'the daemon was reached');
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('completion: bash completes commands and subcommands from the command tree; zsh and fish scripts too', async () => {
  const script = (await cli(['completion', 'bash'])).stdout;
  const complete = async (words: string[]) => {
    const program = `${script}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _platform; echo "\${COMPREPLY[*]}"`;
    return (await runCli(['-c', program], { shell: 'bash' })).stdout.trim();
  };
  assert.is(await complete(['platform', 'dl']), 'dlq');
  assert.is(await complete(['platform', 'dlq', '']), 'list show replay discard');
  assert.is(await complete(['platform', 'ext', 'config', 's']), 'set set-secret');
  assert.match(await complete(['platform', 'dlq', 'replay', '--']), '--wait');
  const zsh = await cli(['completion', 'zsh']);
  assert.match(zsh.stdout, 'bashcompinit');
  assert.match(zsh.stdout, 'complete -F _platform platform');
  const fish = (await cli(['completion', 'fish'])).stdout;
  assert.match(fish, "complete -c platform -n '__fish_seen_subcommand_from dlq; and not __fish_seen_subcommand_from list show replay discard' -a 'list show replay discard'");
  assert.is((await cli(['completion', 'tcsh'])).code, 2);
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
  const onTerminal = await runCliOnTty(['login', '--email', ADMIN.email, '--password-stdin'], {
    env: { XDG_CONFIG_HOME: await tempDir(), PLATFORM_URL: t.url },
    answers: `${ADMIN.password}\n\x04`,
    waitFor: 'reading the password from stdin; end it with Ctrl-D',
  });
  assert.is(onTerminal.code, 0, 'reading stdin from a terminal says so, instead of waiting silently');
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

  const unconfirmed = await cli(['users', 'disable', 'CLI-USER@example.test']);
  assert.is(unconfirmed.code, 2);
  assert.match(unconfirmed.stderr, 'pass --yes to confirm');
  assert.is((await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' })).status, 200);
  assert.is((await cli(['users', 'disable', 'CLI-USER@example.test', '--yes'])).code, 0);
  const disabled = await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' });
  assert.is(disabled.body.code, 'ACCOUNT_DISABLED');
  assert.is((await cli(['users', 'enable', created.id])).code, 0);
  const enabled = await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' });
  assert.is(enabled.status, 200);
  const missing = await cli(['users', 'disable', 'nobody@example.test', '--yes']);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, 'user nobody@example.test not found');
});

test('passwd changes the password and keeps the CLI session working with the fresh token', async () => {
  const own = { XDG_CONFIG_HOME: await tempDir() };
  await cli(['login', '--email', 'cli-user@example.test', '--password-stdin'], { input: 'cli-user-password', env: own });
  const changed = await cli(['passwd', '--password-stdin'], { input: 'cli-user-password\nnew-cli-password\n', env: own });
  assert.is(changed.code, 0, changed.stderr);
  assert.is((await cli(['whoami'], { env: own })).code, 0, 'the session was updated with the fresh token');
  const old = await t.anon.post('/api/auth/login', { email: 'cli-user@example.test', password: 'cli-user-password' });
  assert.is(old.status, 401);
});

test('a new password the daemon would refuse (under 8 or over 72 bytes) is refused before any request', async () => {
  // Nothing listens there: a request would exit 3, so exit 2 shows the check came first.
  const unreachable = { XDG_CONFIG_HOME: await tempDir(), PLATFORM_URL: `http://127.0.0.1:${await closedPort()}`, PLATFORM_TOKEN: 'not-needed' };
  for (const [args, input] of [
    [['users', 'add', '--email', 'short@example.test', '--full-name', 'Short', '--password-stdin'], 'short'],
    [['users', 'reset-password', 'short@example.test', '--password-stdin'], 'short'],
    [['passwd', '--password-stdin'], 'current-password\nshort'],
    [['users', 'add', '--email', 'long@example.test', '--full-name', 'Long', '--password-stdin'], 'é'.repeat(37)],
  ] as const) {
    const refused = await runCli([...args], { input, env: unreachable });
    assert.is(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
    assert.match(refused.stderr, /the new password must be at (least 8|most 72) bytes/);
  }

  // At the prompt: the same rule, said at once, and the question stays open (left here with Ctrl-C).
  const prompted = await runCliOnTty(['users', 'add', '--email', 'short@example.test', '--full-name', 'Short'], {
    env: { XDG_CONFIG_HOME: config, PLATFORM_URL: t.url },
    steps: [
      { after: 'Password for the new user', type: 'short\r' },
      { after: 'must be at least 8 bytes', type: '\x03' },
    ],
  });
  assert.is(prompted.code, 130, prompted.stdout);
  assert.not.match(prompted.stdout, 'Password for the new user again');
  const users = (await t.admin()).get('/api/admin/users');
  assert.not.ok((await users).body.data.some((user: { email: string }) => user.email === 'short@example.test'));
});

test('Ctrl-C or Ctrl-D at a prompt ends the command quietly with exit 130, having sent nothing', async () => {
  const env = { XDG_CONFIG_HOME: await tempDir(), PLATFORM_URL: t.url };
  for (const key of ['\x03', '\x04']) {
    const left = await runCliOnTty(['login', '--email', ADMIN.email], { env, steps: [{ after: 'Password', type: key }] });
    assert.is(left.code, 130, `${JSON.stringify(key)}: ${left.stdout}`);
    assert.not.match(left.stdout, /error|ExitPromptError|at /i);
    assert.is((await cli(['whoami'], { env })).code, 1, 'not logged in');
  }
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

filesOnly(test)('init creates the first administrator of a data directory, once (files only: init writes the users of a data directory)', async () => {
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
