import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { PLATFORM_BIN, runCli, runCliOnTty, spawnDaemon } from './helpers/cli.js';
import { api } from './helpers/http.js';
import { tempDir } from './helpers/temp.js';

let t: TestDaemon;
let adminToken: string;
let readerToken: string;
let config: string;

test.before(async () => {
  t = await startTestDaemon();
  adminToken = (await t.admin()).token;
  readerToken = (await createUser(t, 'cli-reader@example.test')).token;
  config = await tempDir('platform-ext-cli-');
});
test.after(async () => {
  await t.destroy();
});

/** The built CLI against the test daemon; ADMIN unless another token (or none) is given. */
const cli = (args: string[], options: { token?: string | null; input?: string } = {}) => {
  const token = options.token === undefined ? adminToken : options.token;
  return runCli(args, {
    input: options.input,
    env: { XDG_CONFIG_HOME: config, PLATFORM_URL: t.url, ...(token ? { PLATFORM_TOKEN: token } : {}) },
  });
};
const detail = async (key: string) => (await t.anon.get(`/api/marketplace/extensions/${key}`)).body;

test('ext publish by flags creates the extension, then publishes the version', async () => {
  const result = await cli([
    'ext', 'publish',
    '--key', 'notes', '--name', 'Notes', '--description', 'Shared notes', '--category', 'Productivity',
    '--permission', 'notes.pages.read', 'notes.pages.write',
    '--version', '1.0.0', '--artifact-url', 'https://artifacts.example.test/notes-1.0.0.jar',
    '--manifest-url', 'https://artifacts.example.test/notes-1.0.0.json',
    '--requires-platform', '0.1.0', '--requires-sdk', '1.0.0', '--changelog', 'First release',
  ]);
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, 'created extension notes');
  assert.match(result.stdout, /published notes 1\.0\.0 \(\d{4}-\d\d-\d\d\)/);
  const created = (await detail('notes')).data;
  assert.equal(
    [created.name, created.description, created.category, created.permissions, created.latestVersion],
    ['Notes', 'Shared notes', 'productivity', ['notes.pages.read', 'notes.pages.write'], '1.0.0'],
  );
  const record = (await t.anon.get('/api/marketplace/extensions/notes/versions/1.0.0')).body.data;
  assert.equal(
    [record.manifestUrl, record.requiresPlatform, record.requiresSdk, record.changelog],
    ['https://artifacts.example.test/notes-1.0.0.json', '0.1.0', '1.0.0', 'First release'],
  );
});

test('ext publish on an existing extension only adds the version; --json prints the version record', async () => {
  const result = await cli([
    'ext', 'publish', '--key', 'notes', '--version', '1.1.0', '--artifact-url', 'https://a.example.test/n.jar', '--json',
  ]);
  assert.is(result.code, 0, result.stderr);
  const record = JSON.parse(result.stdout);
  assert.is(record.version, '1.1.0');
  assert.is(record.yanked, false);
  assert.equal((await detail('notes')).data.versions.map((entry: { version: string }) => entry.version), ['1.1.0', '1.0.0']);
});

test('ext publish FILE.json takes the same fields as the API; flags override the file', async () => {
  const file = join(await tempDir(), 'release.json');
  writeFileSync(
    file,
    JSON.stringify({
      extensionKey: 'from-file',
      name: 'From File',
      category: 'integrations',
      permissions: ['from-file.items.read'],
      version: '0.1.0',
      artifactUrl: 'https://a.example.test/from-file.jar',
      manifestUrl: null,
      changelog: 'from a file',
    }),
  );
  const result = await cli(['ext', 'publish', file, '--version', '0.2.0-beta.1']);
  assert.is(result.code, 0, result.stderr);
  const created = (await detail('from-file')).data;
  assert.equal([created.name, created.category, created.permissions], ['From File', 'integrations', ['from-file.items.read']]);
  assert.equal(created.versions.map((entry: { version: string }) => entry.version), ['0.2.0-beta.1']);

  const typo = join(await tempDir(), 'typo.json');
  writeFileSync(typo, JSON.stringify({ extensionKey: 'typo-file', version: '1.0.0', artifactUrl: 'https://a.test/x.jar', nmae: 'x' }));
  const refused = await cli(['ext', 'publish', typo]);
  assert.is(refused.code, 2);
  assert.match(refused.stderr, 'unknown field nmae');
  const broken = join(await tempDir(), 'broken.json');
  writeFileSync(broken, '{"extensionKey":');
  assert.is((await cli(['ext', 'publish', broken])).code, 2);
  assert.is((await cli(['ext', 'publish', join(config, 'missing.json')])).code, 2);
});

test('without a terminal, a missing required field is a usage error (2) and nothing is created', async () => {
  const cases: Array<[string[], string]> = [
    [['--name', 'N', '--version', '1.0.0', '--artifact-url', 'https://a.test/x.jar'], '--key'],
    [['--key', 'half-done', '--name', 'N', '--artifact-url', 'https://a.test/x.jar'], '--version'],
    [['--key', 'half-done', '--name', 'N', '--version', '1.0.0'], '--artifact-url'],
    [['--key', 'half-done', '--version', '1.0.0', '--artifact-url', 'https://a.test/x.jar'], '--name'],
  ];
  for (const [args, flag] of cases) {
    const result = await cli(['ext', 'publish', ...args]);
    assert.is(result.code, 2, `${flag}: ${result.stderr}`);
    assert.match(result.stderr, `missing ${flag}`);
  }
  assert.is((await t.anon.get('/api/marketplace/extensions/half-done')).status, 404);
});

test('a version the daemon refuses creates nothing; the error is printed with exit 1', async () => {
  const result = await cli([
    'ext', 'publish', '--key', 'refused', '--name', 'R', '--version', 'v1', '--artifact-url', 'https://a.test/x.jar',
  ]);
  assert.is(result.code, 1);
  assert.match(result.stderr, 'version');
  assert.is((await t.anon.get('/api/marketplace/extensions/refused')).status, 404, 'the extension was not created either');
  const duplicate = await cli(['ext', 'publish', '--key', 'notes', '--version', '1.0.0', '--artifact-url', 'https://a.test/x.jar']);
  assert.is(duplicate.code, 1);
  assert.match(duplicate.stderr, 'already published');
});

test('ext list prints a table, filters by --search and --category, and --json prints the summaries', async () => {
  const table = await cli(['ext', 'list'], { token: null });
  assert.is(table.code, 0, table.stderr);
  assert.match(table.stdout, /KEY\s+NAME\s+CATEGORY\s+LATEST\s+AUTHOR/);
  assert.match(table.stdout, /notes\s+Notes\s+productivity\s+1\.1\.0\s+Administrator/);
  const searched = JSON.parse((await cli(['ext', 'list', '--search', 'FILE', '--json'], { token: null })).stdout);
  assert.equal(searched.map((item: { extensionKey: string }) => item.extensionKey), ['from-file']);
  assert.equal(Object.keys(searched[0]).sort(), ['author', 'category', 'description', 'extensionKey', 'latestVersion', 'name']);
  const category = JSON.parse((await cli(['ext', 'list', '--category', 'PRODUCTIVITY', '--json'])).stdout);
  assert.equal(category.map((item: { extensionKey: string }) => item.extensionKey), ['notes']);
  const paged = await cli(['ext', 'list', '--limit', '1']);
  assert.match(paged.stdout, /\(1-1 of \d+; see --offset, or --all\)/);
  const none = await cli(['ext', 'list', '--search', 'no-such-thing-anywhere']);
  assert.match(none.stdout, '(no extensions match)');
  const invalid = await cli(['ext', 'list', '--limit', '501']);
  assert.is(invalid.code, 2, 'a bad flag value is a usage error, found before any request');
  assert.match(invalid.stderr, "option '--limit <n>' argument '501' is invalid. must be from 1 to 500");
});

test('ext show prints the metadata and a versions table; --json prints the detail', async () => {
  await cli(['ext', 'yank', 'notes', '1.0.0', '--yes']);
  const shown = await cli(['ext', 'show', 'notes'], { token: null });
  assert.is(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^notes {2}Notes\n/);
  assert.match(shown.stdout, 'latest:       1.1.0');
  assert.match(shown.stdout, 'permissions:  notes.pages.read, notes.pages.write');
  assert.match(shown.stdout, /VERSION\s+DATE\s+YANKED\n1\.1\.0\s+\d{4}-\d\d-\d\d\s+no\n1\.0\.0\s+\d{4}-\d\d-\d\d\s+yes/);
  const json = JSON.parse((await cli(['ext', 'show', 'notes', '--json'])).stdout);
  assert.equal(json, (await detail('notes')).data);
  const missing = await cli(['ext', 'show', 'nothing-here']);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, 'extension nothing-here not found');
});

test('ext update changes metadata; without a change it is a usage error', async () => {
  const result = await cli(['ext', 'update', 'notes', '--name', 'Team Notes', '--permission', 'notes.pages.read']);
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, 'updated notes');
  const updated = (await detail('notes')).data;
  assert.equal([updated.name, updated.permissions, updated.description], ['Team Notes', ['notes.pages.read'], 'Shared notes']);
  assert.is((await cli(['ext', 'update', 'notes'])).code, 2);
  const bad = await cli(['ext', 'update', 'notes', '--permission', 'other.pages.read']);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, 'other.pages.read');
});

test('ext yank asks for confirmation: without a terminal and without --yes it refuses (2) and yanks nothing', async () => {
  const refused = await cli(['ext', 'yank', 'notes', '1.1.0']);
  assert.is(refused.code, 2);
  assert.match(refused.stderr, 'pass --yes to confirm');
  assert.is((await detail('notes')).data.versions[0].yanked, false);
  const declined = await runCliOnTty(['ext', 'yank', 'notes', '1.1.0'], {
    env: { XDG_CONFIG_HOME: config, PLATFORM_URL: t.url, PLATFORM_TOKEN: adminToken },
    answers: 'n\r',
    waitFor: 'Yank notes 1.1.0?',
  });
  assert.is(declined.code, 1, 'declining exits 1');
  assert.match(declined.stdout, 'cancelled; nothing was changed');
  assert.is((await detail('notes')).data.versions[0].yanked, false);

  const yanked = await cli(['ext', 'yank', 'notes', '1.1.0', '--yes', '--reason', 'crashes on start']);
  assert.is(yanked.code, 0, yanked.stderr);
  assert.match(yanked.stdout, 'yanked notes 1.1.0');
  assert.is((await detail('notes')).data.versions[0].yanked, true);
  assert.is((await cli(['ext', 'yank', 'notes', '1.1.0', '--yes'])).code, 0, 'yanking again is fine');
  const audit = (await api(t.url, adminToken).get('/api/admin/audit?extensionKey=notes&limit=1')).body.data;
  assert.is(audit[0].reason, 'crashes on start');
  assert.is((await cli(['ext', 'yank', 'notes', '7.0.0', '--yes'])).code, 1, 'an unknown version');
});

test('ext unyank makes the version available again', async () => {
  const result = await cli(['ext', 'unyank', 'notes', '1.1.0']);
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, 'notes 1.1.0 is available');
  assert.is((await detail('notes')).data.versions[0].yanked, false);
});

test('ext audit prints the trail newest first, by extension, limited; --json prints the records', async () => {
  const table = await cli(['ext', 'audit', 'notes']);
  assert.is(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  assert.match(lines[0]!, /TIME\s+ACTOR\s+ACTION\s+EXTENSION\s+VERSION\s+DETAILS/);
  assert.match(lines[1]!, /admin@example\.test\s+unyank\s+notes\s+1\.1\.0/);
  assert.match(table.stdout, /yank\s+notes\s+1\.1\.0\s+crashes on start/);
  assert.match(table.stdout, /update\s+notes\s+-\s+name, permissions/);
  const json = JSON.parse((await cli(['ext', 'audit', 'notes', '--limit', '2', '--json'])).stdout);
  assert.equal(json.map((record: { action: string }) => record.action), ['unyank', 'yank']);
  const all = JSON.parse((await cli(['ext', 'audit', '--json'])).stdout);
  assert.ok(all.some((record: { extensionKey: string }) => record.extensionKey === 'from-file'));
  const forbidden = await cli(['ext', 'audit'], { token: readerToken });
  assert.is(forbidden.code, 1);
  assert.match(forbidden.stderr, 'ADMIN');
  const paged = JSON.parse((await cli(['ext', 'audit', 'notes', '--offset', '1', '--limit', '1', '--json'])).stdout);
  assert.equal(paged.map((record: { action: string }) => record.action), ['yank'], '--offset skips the newest');
});

test('ext audit of an extension that does not exist is "not found" (1), not an empty trail', async () => {
  const typo = await cli(['ext', 'audit', 'nosuch']);
  assert.is(typo.code, 1);
  assert.match(typo.stderr, 'extension nosuch not found');
});

test('ext categories lists the categories with their counts', async () => {
  const table = await cli(['ext', 'categories'], { token: null });
  assert.is(table.code, 0, table.stderr);
  assert.match(table.stdout, /CATEGORY\s+COUNT\nintegrations\s+1\nproductivity\s+1/);
  const json = JSON.parse((await cli(['ext', 'categories', '--json'])).stdout);
  assert.equal(json, [
    { category: 'integrations', count: 1 },
    { category: 'productivity', count: 1 },
  ]);
});

test('ext list pages: a hint past the first page, --offset, and --all reaches every extension past the page maximum', async () => {
  const admin = api(t.url, adminToken);
  const keys = Array.from({ length: 505 }, (_, index) => `bulk-${String(index).padStart(3, '0')}`);
  for (let start = 0; start < keys.length; start += 25) {
    await Promise.all(keys.slice(start, start + 25).map((key) => admin.post('/api/admin/marketplace/extensions', { extensionKey: key, name: key })));
  }
  const total = (await t.anon.get('/api/marketplace/extensions?limit=1')).body.meta.total;
  assert.ok(total > 500);
  const first = await cli(['ext', 'list']);
  assert.match(first.stdout, `(1-50 of ${total}; see --offset, or --all)`);
  const page = JSON.parse((await cli(['ext', 'list', '--search', 'bulk', '--offset', '500', '--json'])).stdout);
  assert.equal(page.map((item: { extensionKey: string }) => item.extensionKey), keys.slice(500));
  const every = JSON.parse((await cli(['ext', 'list', '--all', '--json'])).stdout);
  assert.is(every.length, total);
  assert.ok(keys.every((key) => every.some((item: { extensionKey: string }) => item.extensionKey === key)));
  const both = await cli(['ext', 'list', '--all', '--limit', '5']);
  assert.is(both.code, 2);
});

test('a reader that stops early (| head -1) ends the CLI quietly with exit 0', async () => {
  const result = await runCli(['-c', `"${process.execPath}" "${PLATFORM_BIN}" ext list --all --json | head -1; echo "exit=\${PIPESTATUS[0]}" >&2`], {
    env: { PLATFORM_URL: t.url, XDG_CONFIG_HOME: config },
    shell: 'bash',
  });
  assert.is(result.stdout, '[\n');
  assert.is(result.stderr, 'exit=0\n', 'no stack trace, exit 0');
});

test('publishing needs a session: anonymous callers get the daemon error and exit 1', async () => {
  const result = await cli(
    ['ext', 'publish', '--key', 'anon-ext', '--name', 'A', '--version', '1.0.0', '--artifact-url', 'https://a.test/x.jar'],
    { token: null },
  );
  assert.is(result.code, 1);
  assert.match(result.stderr, 'authentication required');
  const forbidden = await cli(['ext', 'unyank', 'notes', '1.1.0'], { token: readerToken });
  assert.is(forbidden.code, 1);
});

test('platform serve --seed and PLATFORM_SEED=1 load the development catalog', async () => {
  for (const [args, env] of [
    [['--seed'], {}],
    [[], { PLATFORM_SEED: '1' }],
  ] as const) {
    const daemon = await spawnDaemon(await tempDir(), { ...env }, [...args]);
    try {
      assert.match(daemon.output(), /seed: added 10 extensions from \S+\/seed\/catalog\.json/);
      const env = { PLATFORM_URL: daemon.url, XDG_CONFIG_HOME: config };
      const list = await runCli(['ext', 'list', '--json', '--limit', '500'], { env });
      const keys = JSON.parse(list.stdout).map((item: { extensionKey: string }) => item.extensionKey);
      assert.ok(keys.includes('crm') && keys.includes('chat'), keys.join(','));
    } finally {
      daemon.child.kill('SIGTERM');
      assert.is(await daemon.exited, 0);
    }
  }
  const plain = await spawnDaemon(await tempDir());
  try {
    assert.not.match(plain.output(), 'seed:');
  } finally {
    plain.child.kill('SIGTERM');
    await plain.exited;
  }
});

test.run();
