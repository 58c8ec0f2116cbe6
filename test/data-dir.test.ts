import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PLATFORM_BIN, spawnDaemon, type CliResult } from './helpers/cli.js';
import { isPlatformEntry } from '../src/daemon/store/data-dir.js';
import { ADMIN, startTestDaemon } from './helpers/daemon.js';
import { workspaceWith } from './helpers/fixtures.js';
import { filesOnly } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';

const adminEnv = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, PLATFORM_BCRYPT_COST: '4' };
const modeOf = (path: string) => statSync(path).mode & 0o777;

/**
 * `bin/platform` as runCli runs it, but given up on after 20 s (code null):
 * a bad data directory once made `serve` spin forever.
 */
function runBounded(args: string[], env: Record<string, string> = {}, input = '', cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PLATFORM_BIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let gaveUp = false;
    const guard = setTimeout(() => {
      gaveUp = true;
      child.kill('SIGKILL');
    }, 20_000);
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code: gaveUp ? null : code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** `platform serve` and `platform init` on the same data directory argument. */
async function serveAndInit(dataDir: string, cwd?: string): Promise<Array<[string, CliResult]>> {
  return [
    ['serve', await runBounded(['serve', '--port', '0', '--data-dir', dataDir], adminEnv, '', cwd)],
    ['init', await runBounded(['init', '--data-dir', dataDir, '--email', ADMIN.email, '--password-stdin'], adminEnv, ADMIN.password, cwd)],
  ];
}

/** One line on stderr, prefixed as every CLI error is. */
function assertOneLine(command: string, result: CliResult, code: number, names: string) {
  assert.is(result.code, code, `${command}: ${result.stderr}`);
  const lines = result.stderr.trimEnd().split('\n');
  assert.is(lines.length, 1, `${command}: one line: ${result.stderr}`);
  assert.match(lines[0]!, /^platform: /);
  assert.ok(lines[0]!.includes(names), `${command}: ${lines[0]} names ${names}`);
}

test('an empty --data-dir or PLATFORM_DATA_DIR is a usage error (exit 2), and nothing is written in the current directory', async () => {
  const cwd = await tempDir();
  for (const [command, result] of await serveAndInit('', cwd)) assertOneLine(command, result, 2, '--data-dir / PLATFORM_DATA_DIR is empty');
  const fromEnv = await runBounded(['serve', '--port', '0'], { ...adminEnv, PLATFORM_DATA_DIR: '' }, '', cwd);
  assertOneLine('serve', fromEnv, 2, 'PLATFORM_DATA_DIR is empty');
  assert.equal(readdirSync(cwd), []);
});

// Linux's /proc takes no new directory, answering ENOENT: Node's recursive mkdir looped on it forever.
const withProc = existsSync('/proc/self/stat') ? test : test.skip;
withProc('a data directory under /proc fails at once, in one line naming it (skipped without a Linux /proc)', async () => {
  for (const [command, result] of await serveAndInit('/proc/nonexist')) {
    assertOneLine(command, result, 1, 'cannot create the data directory /proc/nonexist');
  }
});

test('a data directory that cannot be created fails at once, in one line naming it: a path under a file, a file', async () => {
  const parent = await tempDir();
  const file = join(parent, 'a-file');
  writeFileSync(file, 'not a directory');
  for (const [dataDir, names] of [
    [join(file, 'data'), `${file} is not a directory`],
    [file, `cannot use ${file} as the data directory`],
  ] as const) {
    for (const [command, result] of await serveAndInit(dataDir)) assertOneLine(command, result, 1, names);
  }
});

test('an existing directory that is neither empty nor a platform data directory is refused, naming it, and left as it was', async () => {
  const clone = await tempDir();
  mkdirSync(join(clone, '.git'));
  writeFileSync(join(clone, 'README.md'), '# a project');
  chmodSync(join(clone, 'README.md'), 0o644);
  chmodSync(clone, 0o755);
  for (const [command, result] of await serveAndInit(clone)) {
    assertOneLine(command, result, 1, `${clone} is not empty and is not a platform data directory`);
  }
  assert.equal(readdirSync(clone).sort(), ['.git', 'README.md']);
  assert.is(modeOf(join(clone, 'README.md')), 0o644);
  assert.is(modeOf(clone), 0o755);
});

test('a directory prepared in advance (holding only plugins/ and lost+found/) is used, and the modes it was given are kept', async () => {
  const dir = await tempDir();
  chmodSync(dir, 0o750);
  mkdirSync(join(dir, 'plugins'), { mode: 0o755 });
  chmodSync(join(dir, 'plugins'), 0o755);
  mkdirSync(join(dir, 'lost+found'));
  const daemon = await spawnDaemon(dir, adminEnv);
  try {
    assert.is(modeOf(dir), 0o750);
    assert.is(modeOf(join(dir, 'plugins')), 0o755);
    assert.is(modeOf(join(dir, 'master.key')), 0o600, 'its own files are private');
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test("the daemon tightens the mode of its own files only: an operator's files and plugins keep theirs", async () => {
  const dir = join(await tempDir(), 'data');
  const first = await spawnDaemon(dir, adminEnv);
  first.child.kill('SIGTERM');
  await first.exited;

  chmodSync(join(dir, 'master.key'), 0o644);
  writeFileSync(join(dir, 'NOTES.txt'), 'where the backups go');
  chmodSync(join(dir, 'NOTES.txt'), 0o644);
  mkdirSync(join(dir, 'notes'));
  writeFileSync(join(dir, 'notes', 'restored.txt'), 'restored from a backup');
  chmodSync(join(dir, 'notes', 'restored.txt'), 0o640);
  writeFileSync(join(dir, 'plugins', 'README'), 'plugins are code');
  chmodSync(join(dir, 'plugins', 'README'), 0o644);
  chmodSync(join(dir, 'plugins'), 0o755);
  const second = await spawnDaemon(dir, adminEnv);
  try {
    assert.match(second.output(), `${join(dir, 'master.key')} was readable by others; its mode is now 0600`);
    assert.is(modeOf(join(dir, 'master.key')), 0o600);
    assert.not.match(second.output(), 'NOTES.txt');
    assert.not.match(second.output(), 'restored.txt');
    assert.is(modeOf(join(dir, 'NOTES.txt')), 0o644);
    assert.is(modeOf(join(dir, 'notes', 'restored.txt')), 0o640);
    assert.is(modeOf(join(dir, 'plugins', 'README')), 0o644);
    assert.is(modeOf(join(dir, 'plugins')), 0o755);
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});

test('every name a daemon writes at the top of its data directory marks it as a platform data directory', async () => {
  const t = await startTestDaemon({ seed: true, bootstrapAdmin: null });
  try {
    const admin = await t.as('admin@localhost', readFileSync(join(t.dataDir, 'initial-admin-password'), 'utf8').trim());
    // An extension of its own: the seed's CRM asks for consent and types its events.
    await workspaceWith(admin, 'acme', 'notes');
    assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'notes.page.saved', payload: {} })).status, 200);
    assert.is((await admin.post('/api/auth/logout')).status, 200);
    const names = readdirSync(t.dataDir).filter((name) => name !== 'plugins');
    assert.ok(names.length > 0);
    for (const name of names) assert.ok(isPlatformEntry(name), `${name} is known as the platform's`);
  } finally {
    await t.stop();
  }
});

filesOnly(test)('platform init --data-dir X suggests the platform serve that uses X (files only: init writes the users of a data directory)', async () => {
  const dir = join(await tempDir(), 'my data');
  const init = await runBounded(['init', '--data-dir', dir, '--email', ADMIN.email, '--password-stdin'], { PLATFORM_BCRYPT_COST: '4' }, ADMIN.password);
  assert.is(init.code, 0, init.stderr);
  assert.match(init.stdout, `Start the daemon with \`platform serve --data-dir '${dir}'\``);
  assert.ok(existsSync(join(dir, 'users.json')));
});

test('setting only one of PLATFORM_ADMIN_EMAIL / PLATFORM_ADMIN_PASSWORD stops the start with an error naming the other', async () => {
  for (const [given, missing] of [
    [{ PLATFORM_ADMIN_EMAIL: ADMIN.email }, 'PLATFORM_ADMIN_PASSWORD'],
    [{ PLATFORM_ADMIN_PASSWORD: ADMIN.password }, 'PLATFORM_ADMIN_EMAIL'],
  ] as const) {
    const dir = join(await tempDir(), 'data');
    const result = await runBounded(['serve', '--port', '0', '--data-dir', dir], { PLATFORM_BCRYPT_COST: '4', ...given });
    assertOneLine('serve', result, 2, `${missing} is not`);
    assert.not.ok(existsSync(dir), 'nothing was created');
  }
});

test.run();
