import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { runCli, spawnDaemon } from './helpers/cli.js';
import { startSubscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { filesOnly } from './helpers/postgres.js';

// Text lines, as an operator at a terminal reads them (piped stdout defaults to JSON).
const TEXT = { PLATFORM_LOG_FORMAT: 'text' };
const adminEnv = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, ...TEXT };
const STAMPED = '\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z';

for (const signal of ['SIGHUP', 'SIGTERM'] as const) {
  test(`${signal} stops the daemon cleanly: exit 0, lock released, the shutdown lines stamped on stdout`, async () => {
    const dir = await tempDir();
    const daemon = await spawnDaemon(dir, adminEnv);
    let stdout = '';
    daemon.child.stdout!.on('data', (chunk) => (stdout += chunk));
    daemon.child.kill(signal);
    assert.is(await daemon.exited, 0);
    assert.not.ok(existsSync(join(dir, 'daemon.lock')), 'the lock is released');
    assert.match(stdout, new RegExp(`^${STAMPED} received ${signal}; stopping`, 'm'));
    assert.match(stdout, new RegExp(`^${STAMPED} platform stopped \\(${signal}\\)$`, 'm'));
  });
}

test('a port in use on a fresh data directory creates no administrator; the next start shows the password', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  const dir = join(await tempDir(), 'fresh');
  try {
    const failed = await runCli(['serve', '--port', String(port), '--data-dir', dir], { env: { PLATFORM_BCRYPT_COST: '4' } });
    assert.is(failed.code, 1);
    assert.match(failed.stderr, `port ${port} is in use`);
    assert.not.ok(existsSync(join(dir, 'initial-admin-password')), 'no password written that nobody saw');
  } finally {
    blocker.close();
  }
  const daemon = await spawnDaemon(dir, TEXT);
  try {
    const password = readFileSync(join(dir, 'initial-admin-password'), 'utf8').trim();
    assert.match(daemon.output(), `created the first administrator admin@localhost with password ${password}`);
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test('a --host that is no address of this machine is named as such', async () => {
  const result = await runCli(['serve', '--host', '999.1.1.1', '--port', '0', '--data-dir', await tempDir()], { env: adminEnv });
  assert.is(result.code, 1);
  assert.match(result.stderr, 'cannot listen on 999.1.1.1: no such address');
});

test("a lock naming a live process that is not this host's daemon (a copied data directory) is taken over", async () => {
  for (const [owner, reason] of [
    [`${process.pid}\n${hostname()}\nsome-other-boot:12345\n`, 'that PID is now another process'],
    [`${process.pid}\nanother-machine\nsome-boot:1\n`, 'written on another host'],
  ] as const) {
    const dir = await tempDir();
    writeFileSync(join(dir, 'daemon.lock'), owner);
    const daemon = await spawnDaemon(dir, adminEnv);
    try {
      assert.match(daemon.output(), `took over the stale lock ${join(dir, 'daemon.lock')} (pid ${process.pid}`);
      assert.match(daemon.output(), reason);
      const [pid, host] = readFileSync(join(dir, 'daemon.lock'), 'utf8').split('\n');
      assert.equal([pid, host], [String(daemon.child.pid), hostname()]);
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.exited;
    }
  }
});

filesOnly(test)('start-up lines: admin from the environment, torn log tail cut, data file modes tightened (files only: cuts and tightens data files)', async () => {
  const dir = join(await tempDir(), 'data');
  const first = await spawnDaemon(dir, adminEnv);
  first.child.kill('SIGTERM');
  await first.exited;
  assert.match(first.output(), `created the first administrator ${ADMIN.email} from PLATFORM_ADMIN_EMAIL and PLATFORM_ADMIN_PASSWORD`);

  appendFileSync(join(dir, 'outbox.log'), '{"t":"add","deliv');
  chmodSync(join(dir, 'users.json'), 0o644);
  const second = await spawnDaemon(dir, adminEnv);
  try {
    const output = second.output();
    assert.match(output, `cut a torn last line (17 bytes, never acknowledged) off ${join(dir, 'outbox.log')}`);
    assert.match(output, `warn: ${join(dir, 'users.json')} was readable by others; its mode is now 0600`);
    assert.is(statSync(join(dir, 'users.json')).mode & 0o777, 0o600);
    assert.not.match(output, 'created the first administrator', 'only on the first start');
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});

filesOnly(test)('a restart says how many pending deliveries it resumed (files only: on PostgreSQL a restarted daemon claims from the shared queue as slots free up)', async () => {
  const failing = await startSubscriber(() => ({ status: 500 }));
  const t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [3_600_000] } });
  try {
    const admin = await t.admin();
    await publishExtension(admin, 'crm');
    await workspaceWith(admin, 'acme', 'crm');
    await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', failing.url);
    for (let index = 0; index < 2; index += 1) {
      assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed', payload: {} })).status, 200);
    }
    await failing.waitForCount(2);
    assert.not.match(t.logs.join(''), 'resumed');
    const restarted = await t.restart();
    try {
      assert.match(restarted.logs.join(''), 'resumed 2 pending deliveries');
    } finally {
      await restarted.destroy();
    }
  } finally {
    await t.destroy().catch(() => undefined);
    await failing.close();
  }
});

test('a left-over initial-admin-password file is warned about, with how to remove it, once its password is changed', async () => {
  const t = await startTestDaemon({ bootstrapAdmin: null });
  const file = join(t.dataDir, 'initial-admin-password');
  try {
    const again = await t.restart();
    assert.not.match(again.logs.join(''), 'left over', 'still the way in: no warning');
    const password = readFileSync(file, 'utf8').trim();
    const admin = await again.as('admin@localhost', password);
    const changed = await admin.put('/api/auth/me/password', { currentPassword: password, newPassword: 'a-new-password-1' });
    assert.is(changed.status, 200, changed.text);
    const later = await again.restart();
    assert.match(later.logs.join(''), `warn: ${file} is left over`);
    assert.match(later.logs.join(''), `rm ${file}`);
    await later.destroy();
  } finally {
    await t.destroy().catch(() => undefined);
  }
});

test('keys rotate refuses a directory that is not a platform data directory, and creates nothing', async () => {
  const parent = await tempDir();
  const missing = join(parent, 'dta');
  const result = await runCli(['keys', 'rotate', '--data-dir', missing]);
  assert.is(result.code, 1);
  assert.match(result.stderr, `${missing} does not exist`);
  assert.not.ok(existsSync(missing));

  const empty = join(parent, 'empty');
  mkdirSync(empty);
  const refused = await runCli(['keys', 'rotate', '--data-dir', empty]);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, `${empty} is not a platform data directory`);
  assert.not.ok(existsSync(join(empty, 'master.key')));
});

test.run();
