import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { create as createTar, extract } from 'tar';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from './helpers/cli.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, createWorkspace, install, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';
import { filesOnly } from './helpers/postgres.js';

const CLIENTS = 10;
const USER = { email: 'kept@example.test', password: 'kept-password-1' };

/** No retries (a failed delivery is a dead letter at once), and a delivery timeout longer than any test here. */
const HANGING_STAYS_PENDING = { ...FAST_DISPATCH, deliveryTimeoutMs: 120_000, retrySchedule: [] };

let source: TestDaemon;
let admin: Api & { token: string };
let hanging: Subscriber;
let failing: Subscriber;
let work: string;
let archive: string;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** What a restored daemon must show as the source did. */
async function observable(api: Api) {
  const data = async (path: string) => {
    const result = await api.get(path);
    assert.is(result.status, 200, `${path}: ${result.text}`);
    return result.body.data;
  };
  return {
    catalog: await data('/api/marketplace/extensions'),
    audit: await data('/api/admin/audit'),
    users: (await data('/api/admin/users')).map((user: { email: string }) => user.email).sort(),
    workspaces: await data('/api/workspaces'),
    subscriptions: await data('/api/workspaces/w0/subscriptions'),
    deadLetters: (await data('/api/admin/dead-letters')).map((letter: { id: string }) => letter.id),
    // Its attempt with the request it sent and the headers of the answer.
    deadDeliveries: await data('/api/workspaces/w0/deliveries?status=DEAD'),
    config: await data('/api/admin/marketplace/extensions/crm/config'),
  };
}

test.before(async () => {
  work = await tempDir('platform-backup-');
  archive = join(work, 'platform.tar.gz');
  hanging = await startSubscriber(() => ({ hang: true }));
  failing = await startSubscriber(() => ({ status: 500 }));
  // The delivery to the hanging subscriber must stay pending through the backup (and in the restored
  // daemon through its checks): with FAST_DISPATCH's 2 s timeout and no retry it would be dead-lettered
  // 2 s after its attempt began, which a loaded machine outlasted once. Stopping aborts it.
  source = await startTestDaemon({ dispatch: HANGING_STAYS_PENDING });
  admin = await source.admin();
  await createUser(source, USER.email, { password: USER.password });
  await publishExtension(admin, 'crm');
  for (let client = 0; client < CLIENTS; client += 1) {
    await createWorkspace(admin, `w${client}`);
    await install(admin, `w${client}`, 'crm');
  }
  await subscribeExternal(admin, 'w0', 'deal.won', 'crm', hanging.url);
  await subscribeExternal(admin, 'w0', 'deal.lost', 'crm', failing.url);
  const configured = await admin.put('/api/admin/marketplace/extensions/crm/config', {
    fields: [{ name: 'apiKey', type: 'SECRET', value: 'kept-secret-value' }],
  });
  assert.is(configured.status, 200, configured.text);
  assert.is((await admin.post('/api/workspaces/w0/events/publish', { eventKey: 'deal.lost', payload: {} })).status, 200);
  assert.is((await admin.post('/api/workspaces/w0/events/publish', { eventKey: 'deal.won', payload: {} })).status, 200);
  await waitFor('a dead letter', async () => (await admin.get('/api/admin/status')).body.data.deadLetters === 1);
  await hanging.waitForCount(1);
});

test.after(async () => {
  await source.destroy();
  await hanging.close();
  await failing.close();
  await rm(work, { recursive: true, force: true });
});

filesOnly(test)('a backup taken while 10 clients publish restores every acknowledged event, whole records only, and the same state (files only: backs up the data directory)', async () => {
  const before = await observable(admin);
  assert.ok(before.deadDeliveries[0].attempts[0].request.headers['webhook-signature'], 'set-up: the attempt recorded its request');
  assert.ok(before.deadDeliveries[0].attempts[0].response.headers.date, 'set-up: the attempt recorded the headers of the answer');
  const acknowledged: Array<{ id: string; workspace: string }> = [];
  let publishing = true;
  const clients = Array.from({ length: CLIENTS }, async (_, client) => {
    for (let seq = 0; publishing; seq += 1) {
      const result = await admin.post(`/api/workspaces/w${client}/events/publish`, { eventKey: 'load.tick', payload: { client, seq } });
      if (result.status === 200) acknowledged.push({ id: result.body.meta.eventId, workspace: `w${client}` });
    }
  });
  let ackedBeforeBackup: typeof acknowledged;
  let ackedDuringBackup: number;
  let backup;
  try {
    await waitFor('publishes flowing', () => acknowledged.length >= 50);
    ackedBeforeBackup = [...acknowledged];
    backup = await runCli(['backup', '--out', archive], { env: { PLATFORM_URL: source.url, PLATFORM_TOKEN: admin.token } });
    ackedDuringBackup = acknowledged.length - ackedBeforeBackup.length;
  } finally {
    publishing = false;
    await Promise.all(clients);
  }
  assert.is(backup.code, 0, backup.stderr);
  assert.match(backup.stdout, `backup written to ${archive}`);
  assert.ok(ackedDuringBackup > 0, 'writes went on during the backup');
  assert.not.ok(existsSync(`${archive}.partial`));

  const restoredDir = join(work, 'restored');
  const restore = await runCli(['restore', archive, '--data-dir', restoredDir, '--master-key-file', sourceKeyFile()]);
  assert.is(restore.code, 0, restore.stderr);
  assert.match(restore.stdout, 'which the restored daemon will use');
  assert.match(restore.stdout, 'PLATFORM_JWT_SECRET');
  const restoredFiles = filesUnder(restoredDir).map((file) => relative(restoredDir, file));
  assert.not.ok(restoredFiles.includes('jwt-secret'), 'keys stay out of the archive without --include-keys');
  assert.equal(readFileSync(join(restoredDir, 'master.key')), readFileSync(sourceKeyFile()), 'the key given becomes the master.key');
  assert.not.ok(restoredFiles.includes('daemon.lock'));
  for (const file of restoredFiles.filter((name) => name.endsWith('.log'))) {
    const text = readFileSync(join(restoredDir, file), 'utf8');
    if (text === '') continue;
    assert.ok(text.endsWith('\n'), `${file} ends with a whole record`);
    for (const line of text.trimEnd().split('\n')) JSON.parse(line);
  }

  const restored = await startTestDaemon({ dispatch: HANGING_STAYS_PENDING }, restoredDir);
  try {
    const restoredAdmin = await restored.admin();
    await restored.as(USER.email, USER.password);
    assert.equal(await observable(restoredAdmin), before);
    for (let client = 0; client < CLIENTS; client += 1) {
      const listed = await restoredAdmin.get(`/api/workspaces/w${client}/events?limit=1000`);
      const ids = new Set(listed.body.data.map((event: { id: string }) => event.id));
      for (const event of ackedBeforeBackup.filter((entry) => entry.workspace === `w${client}`)) {
        assert.ok(ids.has(event.id), `event ${event.id} of w${client}, acknowledged before the backup, was restored`);
      }
    }
    const status = (await restoredAdmin.get('/api/admin/status')).body.data;
    assert.ok(status.pendingDeliveries >= 1, 'the pending delivery came back');
    assert.is(status.deadLetters, 1);
  } finally {
    await restored.stop();
  }
});

filesOnly(test)('only an ADMIN may take a backup (403); a missing or existing --out is a usage error (files only: its existing --out is the archive of the data directory made above)', async () => {
  const user = await source.as(USER.email, USER.password);
  const refused = await user.get('/api/admin/backup');
  assert.is(refused.status, 403);
  const cli = await runCli(['backup', '--out', join(work, 'user.tar.gz')], { env: { PLATFORM_URL: source.url, PLATFORM_TOKEN: user.token } });
  assert.is(cli.code, 1);
  assert.match(cli.stderr, 'ADMIN');
  assert.not.ok(existsSync(join(work, 'user.tar.gz')) || existsSync(join(work, 'user.tar.gz.partial')));
  const existing = await runCli(['backup', '--out', archive], { env: { PLATFORM_URL: source.url, PLATFORM_TOKEN: admin.token } });
  assert.is(existing.code, 2);
});

/** Unpacks the good archive, lets `change` alter it, and packs it again (a well-formed gzip and tar). */
async function repacked(name: string, change: (dir: string) => void): Promise<string> {
  const dir = join(work, `${name}-unpacked`);
  mkdirSync(dir);
  await extract({ file: archive, cwd: dir });
  change(dir);
  const file = join(work, `${name}.tar.gz`);
  await createTar({ gzip: true, cwd: dir, file, portable: true }, readdirSync(dir));
  return file;
}

const sourceKeyFile = () => join(source.dataDir, 'master.key');

async function assertRefused(
  file: string,
  why: RegExp | string,
  options: { keyFile?: string; exitCode?: number; env?: Record<string, string> } = {},
  target = join(work, `target-${Math.random().toString(36).slice(2)}`),
) {
  const keyFlags = options.env ? [] : ['--master-key-file', options.keyFile ?? sourceKeyFile()];
  const result = await runCli(['restore', file, '--data-dir', target, ...keyFlags], { env: options.env ?? {} });
  assert.is(result.code, options.exitCode ?? 1, result.stdout + result.stderr);
  assert.match(result.stderr, why);
  assert.is(result.stderr.trim().split('\n').length, 1, 'one line');
  assert.not.ok(existsSync(target), 'nothing was written');
  assert.equal(readdirSync(work).filter((name) => name.includes('.restore-')), [], 'no staging left behind');
}

filesOnly(test)('restore refuses a truncated, altered or newer archive, a non-archive and a non-empty directory; it writes nothing (files only: restores a data directory)', async () => {
  const bytes = readFileSync(archive);
  const truncated = join(work, 'truncated.tar.gz');
  writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
  await assertRefused(truncated, /not a readable platform backup|incomplete/);

  const flipped = Buffer.from(bytes);
  flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
  const flippedFile = join(work, 'flipped.tar.gz');
  writeFileSync(flippedFile, flipped);
  await assertRefused(flippedFile, /not a readable platform backup|altered|incomplete/);

  const altered = await repacked('altered', (dir) => {
    const users = join(dir, 'users.json');
    writeFileSync(users, readFileSync(users, 'utf8').replace('kept@example.test', 'evil@example.test'));
  });
  await assertRefused(altered, 'has been altered: users.json does not match its checksum');

  const smuggled = await repacked('smuggled', (dir) => writeFileSync(join(dir, 'extra.json'), '{}'));
  await assertRefused(smuggled, 'extra.json is not in its manifest');

  const newer = await repacked('newer', (dir) => {
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, schemaVersion: 99 }));
  });
  await assertRefused(newer, 'schema version 99');

  const text = join(work, 'notes.txt');
  writeFileSync(text, 'not an archive at all\n');
  await assertRefused(text, 'not a readable platform backup');

  const occupied = join(work, 'occupied');
  mkdirSync(occupied);
  writeFileSync(join(occupied, 'keep.txt'), 'mine');
  const result = await runCli(['restore', archive, '--data-dir', occupied, '--master-key-file', sourceKeyFile()]);
  assert.is(result.code, 1);
  assert.match(result.stderr, 'is not empty');
  assert.equal(readdirSync(occupied), ['keep.txt']);
  assert.is(statSync(join(occupied, 'keep.txt')).size, 4);

  // Node's recursive mkdir spins forever under /proc: the restore stops at once, in one line.
  const unmakeable = await runCli(['restore', archive, '--data-dir', '/proc/platform-nonexistent/data', '--master-key-file', sourceKeyFile()]);
  assert.is(unmakeable.code, 1);
  assert.is(unmakeable.stderr.trim().split('\n').length, 1, unmakeable.stderr);
  assert.match(unmakeable.stderr, '/proc/platform-nonexistent');
});

/** The manifest's checksums made to match the files again, and (given a master key) signed again, as an attacker would. */
function recomputeManifest(dir: string, masterKey?: Buffer): void {
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  manifest.files = filesUnder(dir)
    .map((full) => relative(dir, full))
    .filter((path) => path !== 'manifest.json')
    .sort()
    .map((path) => {
      const bytes = readFileSync(join(dir, path));
      return { path, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    });
  if (masterKey) {
    delete manifest.hmac;
    manifest.keyId = createHash('sha256').update(masterKey).digest('hex').slice(0, 16);
    const signingKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'platform backup manifest signing key', 32));
    manifest.hmac = createHmac('sha256', signingKey).update(JSON.stringify(manifest)).digest('hex');
  }
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
}

const keyFileWith = (name: string, key: Buffer) => {
  const file = join(work, name);
  writeFileSync(file, `${key.toString('base64')}\n`);
  return file;
};

filesOnly(test)('restore refuses an archive whose signature does not hold under the master key given, and writes nothing (files only: restores a data directory)', async () => {
  const recomputed = await repacked('recomputed', (dir) => {
    const users = join(dir, 'users.json');
    writeFileSync(users, readFileSync(users, 'utf8').replace('kept@example.test', 'evil@example.test'));
    recomputeManifest(dir);
  });
  await assertRefused(recomputed, 'has been altered: its manifest does not match its signature');

  // A plugin smuggled in runs at the daemon's next start.
  const plugin = await repacked('plugin', (dir) => {
    mkdirSync(join(dir, 'plugins'), { recursive: true });
    writeFileSync(join(dir, 'plugins', 'evil.mjs'), "export default { extensionKey: 'evil' };\n");
    recomputeManifest(dir);
  });
  await assertRefused(plugin, 'has been altered: its manifest does not match its signature');

  // Signed again under a key of the attacker's: the key given is the one that counts.
  const resigned = await repacked('resigned', (dir) => recomputeManifest(dir, randomBytes(32)));
  await assertRefused(resigned, 'was made by a daemon with another master key');

  const unsigned = await repacked('unsigned', (dir) => {
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    delete manifest.hmac;
    delete manifest.keyId;
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  });
  await assertRefused(unsigned, 'is not signed');

  // The genuine archive, restored with another daemon's key, from a file or PLATFORM_MASTER_KEY.
  const otherKey = randomBytes(32);
  await assertRefused(archive, /was made by a daemon with another master key \(key [0-9a-f]{16}; .* holds [0-9a-f]{16}\): give the master key/, {
    keyFile: keyFileWith('other.key', otherKey),
  });
  await assertRefused(archive, 'was made by a daemon with another master key', { env: { PLATFORM_MASTER_KEY: otherKey.toString('base64') } });
  await assertRefused(archive, 'a key inside the archive cannot vouch for it', { env: {}, exitCode: 2 });
});

filesOnly(test)('a good archive restores with PLATFORM_MASTER_KEY, which then stays out of the data directory (files only: restores a data directory)', async () => {
  const target = join(work, 'with-environment-key');
  const key = readFileSync(sourceKeyFile(), 'utf8').trim();
  const restore = await runCli(['restore', archive, '--data-dir', target], { env: { PLATFORM_MASTER_KEY: key } });
  assert.is(restore.code, 0, restore.stderr);
  assert.match(restore.stdout, 'start the restored daemon with the same PLATFORM_MASTER_KEY');
  assert.not.ok(existsSync(join(target, 'master.key')));
  const restored = await startTestDaemon({ masterKey: key }, target);
  try {
    const config = await (await restored.admin()).get('/api/admin/marketplace/extensions/crm/config');
    assert.is(config.status, 200, 'its secrets decrypt');
  } finally {
    await restored.stop();
  }
});

filesOnly(test)('--include-keys puts master.key and jwt-secret in the archive; restore still needs the key from outside, and refuses a master.key swapped in the archive (files only: backs up the data directory)', async () => {
  const withKeys = join(work, 'with-keys.tar.gz');
  const backup = await runCli(['backup', '--out', withKeys, '--include-keys'], { env: { PLATFORM_URL: source.url, PLATFORM_TOKEN: admin.token } });
  assert.is(backup.code, 0, backup.stderr);
  await assertRefused(withKeys, 'a key inside the archive cannot vouch for it', { env: {}, exitCode: 2 });

  // Whoever can read the archive knows its key and can sign; a master.key of their own is refused.
  const sourceKey = Buffer.from(readFileSync(sourceKeyFile(), 'utf8').trim(), 'base64');
  const swapped = join(work, 'swapped-key.tar.gz');
  const unpacked = join(work, 'swapped-key-unpacked');
  mkdirSync(unpacked);
  await extract({ file: withKeys, cwd: unpacked });
  writeFileSync(join(unpacked, 'master.key'), `${randomBytes(32).toString('base64')}\n`);
  recomputeManifest(unpacked, sourceKey);
  await createTar({ gzip: true, cwd: unpacked, file: swapped, portable: true }, readdirSync(unpacked));
  await assertRefused(swapped, 'holds a master.key that differs from the one given');

  const target = join(work, 'with-keys');
  const restore = await runCli(['restore', withKeys, '--data-dir', target, '--master-key-file', sourceKeyFile()]);
  assert.is(restore.code, 0, restore.stderr);
  assert.match(restore.stdout, 'sessions stay valid');
  assert.equal(readFileSync(join(target, 'master.key')), readFileSync(join(source.dataDir, 'master.key')));
  const restored = await startTestDaemon({}, target);
  try {
    // The same token secret: the source's session is valid on the restored daemon.
    assert.is((await restored.anon.get('/api/auth/me', { token: admin.token })).status, 200);
  } finally {
    await restored.stop();
  }
});

test.run();
