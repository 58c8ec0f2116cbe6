import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AuditTrail } from '../src/daemon/store/file/audit-trail.js';
import { SEED_FILE, seedCatalog } from '../src/daemon/catalog/seed.js';
import type { AuditRecord } from '../src/daemon/catalog/types.js';
import { DomainError } from '../src/daemon/errors.js';
import { PLATFORM_VERSION } from '../src/daemon/version.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import type { Api } from './helpers/http.js';
import { openFilesUnder, tempDir } from './helpers/temp.js';
import { filesOnly } from './helpers/postgres.js';

let t: TestDaemon;
let admin: Api;
let reader: Api;

test.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
  reader = await createUser(t, 'reader@example.test');
});
test.after(async () => {
  await t.destroy();
});

const ADMIN_BASE = '/api/admin/marketplace/extensions';
const BROWSE_BASE = '/api/marketplace/extensions';
const DETAIL_FIELDS = ['category', 'description', 'extensionKey', 'latestVersion', 'name', 'permissions', 'versions'];
const SUMMARY_FIELDS = ['author', 'category', 'description', 'extensionKey', 'latestVersion', 'name'];
const RECORD_FIELDS = [
  'artifactUrl',
  'changelog',
  'manifest',
  'manifestUrl',
  'releaseDate',
  'requiresPlatform',
  'requiresSdk',
  'version',
  'yanked',
];

const create = (extensionKey: string, fields: Record<string, unknown> = {}, as: Api = admin) =>
  as.post(ADMIN_BASE, { extensionKey, name: `Extension ${extensionKey}`, ...fields });
const publish = (key: string, version: string, fields: Record<string, unknown> = {}, as: Api = admin) =>
  as.post(`${ADMIN_BASE}/${key}/versions`, { version, artifactUrl: `https://artifacts.example.test/${key}-${version}.jar`, ...fields });
const yank = (key: string, version: string, query = '') => admin.delete(`${ADMIN_BASE}/${key}/versions/${version}${query}`);
const unyank = (key: string, version: string) => admin.put(`${ADMIN_BASE}/${key}/versions/${version}/unyank`);
const detail = async (key: string) => {
  const result = await t.anon.get(`${BROWSE_BASE}/${key}`);
  assert.is(result.status, 200, result.text);
  return result.body.data;
};
const summary = async (key: string) => {
  const result = await t.anon.get(`${BROWSE_BASE}?search=${key}&limit=500`);
  return result.body.data.find((item: { extensionKey: string }) => item.extensionKey === key);
};
const auditOf = async (key: string, limit = 100): Promise<AuditRecord[]> => {
  const result = await admin.get(`/api/admin/audit?extensionKey=${key}&limit=${limit}`);
  assert.is(result.status, 200, result.text);
  return result.body.data;
};
const todayUtc = () => new Date().toISOString().slice(0, 10);

test('create answers 201 with the seven-field detail; browse shows the six-field summary with the author', async () => {
  const created = await create('created', {
    description: 'A first extension',
    category: 'Productivity',
    permissions: ['created.notes.read'],
  });
  assert.is(created.status, 201, created.text);
  assert.equal(Object.keys(created.body.data).sort(), DETAIL_FIELDS);
  assert.equal(created.body.data, {
    extensionKey: 'created',
    name: 'Extension created',
    description: 'A first extension',
    category: 'productivity',
    latestVersion: null,
    versions: [],
    permissions: ['created.notes.read'],
  });
  assert.equal(await detail('created'), created.body.data);
  const item = await summary('created');
  assert.equal(Object.keys(item).sort(), SUMMARY_FIELDS);
  assert.equal(item, {
    extensionKey: 'created',
    name: 'Extension created',
    description: 'A first extension',
    category: 'productivity',
    latestVersion: null,
    author: 'Administrator',
  });
});

test('optional fields default: empty description, category "other", no permissions', async () => {
  const created = await create('defaults');
  assert.is(created.status, 201);
  assert.equal(
    { description: created.body.data.description, category: created.body.data.category, permissions: created.body.data.permissions },
    { description: '', category: 'other', permissions: [] },
  );
});

test('a duplicate extensionKey is 409 CONFLICT and leaves the first one as it was', async () => {
  await create('duplicate', { name: 'Original' });
  const again = await create('duplicate', { name: 'Impostor' });
  assert.is(again.status, 409);
  assert.is(again.body.code, 'CONFLICT');
  assert.is((await detail('duplicate')).name, 'Original');
});

test('concurrent creates of one key: exactly one 201, the rest 409', async () => {
  const results = await Promise.all(Array.from({ length: 8 }, () => create('racing')));
  assert.equal(results.map((result) => result.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  assert.is((await auditOf('racing')).length, 1, 'one create recorded');
});

test('invalid extension bodies are 400 and create nothing', async () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['uppercase key', { extensionKey: 'CRM', name: 'x' }],
    ['one-letter key', { extensionKey: 'a', name: 'x' }],
    ['dotted key', { extensionKey: 'crm.deals', name: 'x' }],
    ['key starting with a digit', { extensionKey: '1crm', name: 'x' }],
    ['65-character key', { extensionKey: `a${'b'.repeat(64)}`, name: 'x' }],
    ['missing name', { extensionKey: 'no-name' }],
    ['blank name', { extensionKey: 'blank-name', name: '   ' }],
    ['unknown field', { extensionKey: 'typo', name: 'x', catgory: 'misspelt' }],
    ['permissions not an array', { extensionKey: 'perm-type', name: 'x', permissions: 'perm-type.a.read' }],
  ];
  for (const [label, body] of cases) {
    const result = await admin.post(ADMIN_BASE, body);
    assert.is(result.status, 400, label);
    assert.is(result.body.code, 'VALIDATION_ERROR', label);
  }
  for (const key of ['no-name', 'blank-name', 'typo', 'perm-type']) assert.is((await t.anon.get(`${BROWSE_BASE}/${key}`)).status, 404);
});

test("permissions must be <the extension's own key>.<resource>.<read|write>", async () => {
  const refused: string[][] = [
    ['perms.deals.read', 'crm.deals.read'],
    ['perms.deals.delete'],
    ['perms.deals'],
    ['perms.Deals.read'],
    ['perms.deals.read.extra'],
    ['permsx.deals.read'],
    ['perms..read'],
  ];
  for (const permissions of refused) {
    const result = await create('perms', { permissions });
    assert.is(result.status, 400, JSON.stringify(permissions));
    const bad = permissions.findIndex((name) => !/^perms\.[a-z0-9-]+\.(read|write)$/.test(name));
    assert.equal(result.body.meta.issues[0].path, `permissions.${bad}`, JSON.stringify(permissions));
  }
  assert.is((await t.anon.get(`${BROWSE_BASE}/perms`)).status, 404, 'nothing was created');
  const accepted = await create('perms', { permissions: ['perms.deals.read', 'perms.deal-stages.write', 'perms.deals.read'] });
  assert.is(accepted.status, 201, accepted.text);
  assert.equal(accepted.body.data.permissions, ['perms.deals.read', 'perms.deal-stages.write'], 'duplicates dropped');
});

test('publishing a version answers 201 with the full record, nulls for absent optionals, and the UTC release date', async () => {
  await create('records');
  const before = todayUtc();
  const minimal = await publish('records', '1.0.0');
  const after = todayUtc();
  assert.is(minimal.status, 201, minimal.text);
  assert.equal(Object.keys(minimal.body.data).sort(), RECORD_FIELDS);
  assert.ok([before, after].includes(minimal.body.data.releaseDate), minimal.body.data.releaseDate);
  assert.equal(minimal.body.data, {
    version: '1.0.0',
    releaseDate: minimal.body.data.releaseDate,
    yanked: false,
    artifactUrl: 'https://artifacts.example.test/records-1.0.0.jar',
    manifestUrl: null,
    requiresPlatform: null,
    requiresSdk: null,
    changelog: null,
    manifest: null,
  });
  const full = await publish('records', '1.1.0', {
    artifactUrl: 'http://artifacts.example.test/records.jar',
    manifestUrl: 'https://artifacts.example.test/records/manifest.json',
    requiresPlatform: '0.1.0',
    requiresSdk: '1.0.0-beta.2',
    changelog: 'Adds records.',
  });
  assert.is(full.status, 201, full.text);
  const fetched = await t.anon.get(`${BROWSE_BASE}/records/versions/1.1.0`);
  assert.is(fetched.status, 200);
  assert.equal(fetched.body.data, full.body.data, 'the version record GET answers the same record');
  assert.is(fetched.body.data.requiresSdk, '1.0.0-beta.2');
  const explicitNulls = await publish('records', '1.2.0', { manifestUrl: null, changelog: null });
  assert.is(explicitNulls.status, 201, 'null means absent');
});

test('versions must be strict SemVer 2.0.0; URLs http(s); requiresPlatform and requiresSdk SemVer', async () => {
  await create('strict');
  for (const version of ['v1.0.0', '=1.0.0', '1.0', '1', '01.0.0', '1.0.0-beta.01', ' 1.0.0', '1.0.0 ', '', 'latest', '1.0.0-', '1.0.0+']) {
    const result = await publish('strict', version);
    assert.is(result.status, 400, `version ${JSON.stringify(version)}`);
    assert.is(result.body.meta.issues[0].path, 'version');
  }
  const notHttp = ['ftp://example.test/a.jar', 'file:///etc/passwd', 'javascript:alert(1)', 'example.test/a.jar', 'https://', ''];
  for (const artifactUrl of notHttp) {
    const result = await publish('strict', '1.0.0', { artifactUrl });
    assert.is(result.status, 400, `artifactUrl ${artifactUrl}`);
    assert.is(result.body.meta.issues[0].path, 'artifactUrl');
  }
  assert.is((await publish('strict', '1.0.0', { manifestUrl: 'ftp://example.test/m.json' })).status, 400);
  assert.is((await publish('strict', '1.0.0', { requiresPlatform: '>=0.1.0' })).status, 400);
  assert.is((await publish('strict', '1.0.0', { requiresSdk: 'v1.0.0' })).status, 400);
  assert.is((await admin.post(`${ADMIN_BASE}/strict/versions`, { version: '1.0.0' })).status, 400, 'artifactUrl is required');
  assert.is((await detail('strict')).versions.length, 0, 'no refused version was stored');
  assert.is((await publish('strict', '1.0.0-rc.1+build.7')).status, 201, 'prerelease and build metadata are SemVer');
});

test('precedence: versions newest first (1.10.0 > 1.9.0, prereleases below their release), latest prefers stable', async () => {
  await create('precedence');
  for (const version of ['1.9.0', '2.0.0-beta.2', '1.10.0', '2.0.0-beta.1', '0.9.0', '2.0.0-alpha.1', '1.10.0-rc.1', '2.0.0-beta.10']) {
    assert.is((await publish('precedence', version)).status, 201, version);
  }
  let current = await detail('precedence');
  assert.equal(
    current.versions.map((entry: { version: string }) => entry.version),
    ['2.0.0-beta.10', '2.0.0-beta.2', '2.0.0-beta.1', '2.0.0-alpha.1', '1.10.0', '1.10.0-rc.1', '1.9.0', '0.9.0'],
  );
  assert.is(current.latestVersion, '1.10.0', 'a higher prerelease does not beat the highest stable version');
  assert.is((await publish('precedence', '2.0.0')).status, 201);
  current = await detail('precedence');
  assert.is(current.versions[0].version, '2.0.0', '2.0.0 > 2.0.0-beta.10');
  assert.is(current.latestVersion, '2.0.0');
  assert.is((await summary('precedence')).latestVersion, '2.0.0', 'the summary agrees');
});

test('build metadata does not count for precedence: 1.0.0+b reserves 1.0.0 and 1.0.0+c', async () => {
  await create('build-meta');
  assert.is((await publish('build-meta', '1.0.0+build.2')).status, 201);
  for (const version of ['1.0.0', '1.0.0+build.9', '1.0.0+build.2']) {
    const result = await publish('build-meta', version);
    assert.is(result.status, 409, version);
    assert.is(result.body.code, 'CONFLICT');
  }
  assert.is((await publish('build-meta', '1.0.1+build.1')).status, 201);
  assert.is((await detail('build-meta')).latestVersion, '1.0.1+build.1');
  assert.is((await t.anon.get(`${BROWSE_BASE}/build-meta/versions/1.0.0+build.2`)).status, 200);
});

test('latestVersion: highest non-yanked stable, else highest non-yanked prerelease, else highest, null without versions', async () => {
  await create('latest-none');
  assert.is((await detail('latest-none')).latestVersion, null);
  assert.is((await summary('latest-none')).latestVersion, null);

  await create('latest-pre');
  await publish('latest-pre', '0.1.0-alpha.1');
  await publish('latest-pre', '0.1.0-beta.1');
  assert.is((await detail('latest-pre')).latestVersion, '0.1.0-beta.1', 'only prereleases: the highest');
  await yank('latest-pre', '0.1.0-beta.1');
  assert.is((await detail('latest-pre')).latestVersion, '0.1.0-alpha.1', 'the highest non-yanked prerelease');

  await create('latest-mixed');
  await publish('latest-mixed', '1.0.0');
  await publish('latest-mixed', '1.1.0-beta.1');
  await yank('latest-mixed', '1.0.0');
  assert.is((await detail('latest-mixed')).latestVersion, '1.1.0-beta.1', 'the only stable version is yanked');

  await create('latest-yanked');
  for (const version of ['1.0.0', '1.1.0', '2.0.0-rc.1']) await publish('latest-yanked', version);
  for (const version of ['1.0.0', '1.1.0', '2.0.0-rc.1']) assert.is((await yank('latest-yanked', version)).status, 204);
  assert.is((await detail('latest-yanked')).latestVersion, '2.0.0-rc.1', 'every version yanked: the highest');
  assert.is((await summary('latest-yanked')).latestVersion, '2.0.0-rc.1');
  await unyank('latest-yanked', '1.0.0');
  assert.is((await detail('latest-yanked')).latestVersion, '1.0.0');
});

test('yank is 204 and idempotent; the version stays listed as yanked; its number is reserved forever', async () => {
  await create('yanking');
  await publish('yanking', '1.0.0');
  await publish('yanking', '1.1.0');
  const first = await yank('yanking', '1.1.0', '?reason=broken%20migration');
  assert.is(first.status, 204);
  assert.is(first.text, '', '204 has no body');
  const again = await yank('yanking', '1.1.0');
  assert.is(again.status, 204, 'yanking a yanked version is also 204');

  const current = await detail('yanking');
  assert.equal(current.versions.map((entry: { version: string; yanked: boolean }) => [entry.version, entry.yanked]), [
    ['1.1.0', true],
    ['1.0.0', false],
  ]);
  assert.is(current.latestVersion, '1.0.0');
  assert.is((await t.anon.get(`${BROWSE_BASE}/yanking/versions/1.1.0`)).body.data.yanked, true);

  const republish = await publish('yanking', '1.1.0');
  assert.is(republish.status, 409);
  assert.match(republish.body.message ?? '', 'yanked');

  const records = await auditOf('yanking');
  assert.equal(records.filter((record) => record.action === 'yank').length, 1, 'a repeated yank changes and records nothing');
});

test('unyank answers 200 with the record, and is idempotent on an available version', async () => {
  await create('unyanking');
  await publish('unyanking', '2.0.0');
  await yank('unyanking', '2.0.0');
  const restored = await unyank('unyanking', '2.0.0');
  assert.is(restored.status, 200, restored.text);
  assert.equal(Object.keys(restored.body.data).sort(), RECORD_FIELDS);
  assert.is(restored.body.data.yanked, false);
  assert.is((await detail('unyanking')).latestVersion, '2.0.0');
  const again = await unyank('unyanking', '2.0.0');
  assert.is(again.status, 200, 'unyanking an available version is not an error');
  assert.equal(again.body.data, restored.body.data);
  const actions = (await auditOf('unyanking')).map((record) => record.action);
  assert.equal(actions, ['unyank', 'yank', 'publish', 'create'], 'the idempotent unyank recorded nothing');
});

test('concurrent publishes of one version: exactly one 201, the rest 409', async () => {
  await create('racing-versions');
  const results = await Promise.all(Array.from({ length: 6 }, () => publish('racing-versions', '1.0.0')));
  assert.equal(results.map((result) => result.status).sort(), [201, 409, 409, 409, 409, 409]);
  assert.is((await detail('racing-versions')).versions.length, 1);
});

test('unknown extensions and versions are 404 NOT_FOUND everywhere; malformed ones 400', async () => {
  await create('known');
  await publish('known', '1.0.0');
  const notFound = [
    await t.anon.get(`${BROWSE_BASE}/unknown-ext`),
    await t.anon.get(`${BROWSE_BASE}/unknown-ext/versions/1.0.0`),
    await t.anon.get(`${BROWSE_BASE}/known/versions/9.9.9`),
    await admin.put(`${ADMIN_BASE}/unknown-ext`, { name: 'x' }),
    await publish('unknown-ext', '1.0.0'),
    await yank('unknown-ext', '1.0.0'),
    await yank('known', '9.9.9'),
    await unyank('unknown-ext', '1.0.0'),
    await unyank('known', '9.9.9'),
  ];
  for (const result of notFound) {
    assert.is(result.status, 404, result.text);
    assert.is(result.body.code, 'NOT_FOUND');
  }
  assert.is((await t.anon.get(`${BROWSE_BASE}/Known`)).status, 400, 'not an extension key');
  assert.is((await t.anon.get(`${BROWSE_BASE}/known/versions/v1.0.0`)).status, 400, 'not a version');
  assert.is((await yank('known', 'latest')).status, 400);
});

test('browse endpoints need no authentication', async () => {
  await create('public-ext');
  await publish('public-ext', '1.0.0');
  for (const path of [
    BROWSE_BASE,
    `${BROWSE_BASE}/public-ext`,
    `${BROWSE_BASE}/public-ext/versions/1.0.0`,
    '/api/marketplace/categories',
  ]) {
    assert.is((await t.anon.get(path)).status, 200, path);
  }
});

test('check order on every admin route: 401, then 403, then 400, then 404', async () => {
  const routes: Array<{ method: string; path: string; invalid: unknown; valid: unknown; badPath?: string }> = [
    { method: 'PUT', path: `${ADMIN_BASE}/nope-ext`, invalid: { name: '' }, valid: { name: 'x' } },
    {
      method: 'POST',
      path: `${ADMIN_BASE}/nope-ext/versions`,
      invalid: { version: 'one', artifactUrl: 'https://a.test/x.jar' },
      valid: { version: '1.0.0', artifactUrl: 'https://a.test/x.jar' },
    },
    {
      method: 'DELETE',
      path: `${ADMIN_BASE}/nope-ext/versions/1.0.0`,
      invalid: undefined,
      valid: undefined,
      badPath: `${ADMIN_BASE}/nope-ext/versions/one`,
    },
    {
      method: 'PUT',
      path: `${ADMIN_BASE}/nope-ext/versions/1.0.0/unyank`,
      invalid: undefined,
      valid: undefined,
      badPath: `${ADMIN_BASE}/NOPE/versions/1.0.0/unyank`,
    },
  ];
  for (const route of routes) {
    const send = (as: Api, path: string, json: unknown) => as.send(route.method, path, json === undefined ? {} : { json });
    const label = `${route.method} ${route.path}`;
    assert.is((await send(t.anon, route.badPath ?? route.path, route.invalid)).status, 401, label);
    assert.is((await send(reader, route.badPath ?? route.path, route.invalid)).status, 403, label);
    assert.is((await send(admin, route.badPath ?? route.path, route.invalid)).status, 400, label);
    assert.is((await send(admin, route.path, route.valid)).status, 404, label);
  }
  const createBody = { extensionKey: 'ORDER', name: 'x' };
  assert.is((await t.anon.post(ADMIN_BASE, createBody)).status, 401);
  assert.is((await reader.post(ADMIN_BASE, createBody)).status, 403);
  assert.is((await admin.post(ADMIN_BASE, createBody)).status, 400);
  assert.is((await t.anon.get('/api/admin/audit?limit=0')).status, 401);
  assert.is((await reader.get('/api/admin/audit?limit=0')).status, 403);
  assert.is((await admin.get('/api/admin/audit?limit=0')).status, 400);
  assert.is((await reader.post(ADMIN_BASE, { extensionKey: 'by-reader', name: 'x' })).status, 403, 'a USER cannot publish');
});

test('PUT changes metadata and answers the detail; extensionKey in the body must match the path', async () => {
  await create('editable', { description: 'before', category: 'tools', permissions: ['editable.items.read'] });
  const updated = await admin.put(`${ADMIN_BASE}/editable`, {
    extensionKey: 'editable',
    name: 'Edited',
    category: 'Utilities',
    permissions: ['editable.items.read', 'editable.items.write'],
  });
  assert.is(updated.status, 200, updated.text);
  assert.equal(Object.keys(updated.body.data).sort(), DETAIL_FIELDS);
  assert.equal(
    [updated.body.data.name, updated.body.data.description, updated.body.data.category, updated.body.data.permissions],
    ['Edited', 'before', 'utilities', ['editable.items.read', 'editable.items.write']],
  );
  assert.equal(await detail('editable'), updated.body.data);

  const mismatch = await admin.put(`${ADMIN_BASE}/editable`, { extensionKey: 'other', name: 'Renamed' });
  assert.is(mismatch.status, 400);
  assert.is(mismatch.body.meta.issues[0].path, 'extensionKey');
  const mismatchUnknown = await admin.put(`${ADMIN_BASE}/unknown-ext`, { extensionKey: 'other', name: 'Renamed' });
  assert.is(mismatchUnknown.status, 400, 'validation before existence');
  assert.is((await admin.put(`${ADMIN_BASE}/editable`, {})).status, 400, 'an empty object');
  assert.is((await admin.put(`${ADMIN_BASE}/editable`)).status, 400, 'no body at all');
  assert.is((await admin.put(`${ADMIN_BASE}/editable`, { extensionKey: 'editable' })).status, 400, 'nothing to change');
  assert.is((await admin.put(`${ADMIN_BASE}/editable`, { permissions: ['other.items.read'] })).status, 400);
  assert.is((await admin.put(`${ADMIN_BASE}/editable`, { versions: [] })).status, 400, 'versions are not metadata');
  assert.is((await detail('editable')).name, 'Edited', 'refused updates changed nothing');
});

test("author is the creator's current fullName, and the name at creation once that user is deleted", async () => {
  const ada = await createUser(t, 'ada@example.test', { fullName: 'Ada Admin', roles: ['ADMIN'] });
  assert.is((await create('authored', {}, ada)).status, 201);
  assert.is((await summary('authored')).author, 'Ada Admin');
  await admin.patch(`/api/admin/users/${ada.id}`, { fullName: 'Ada Lovelace' });
  assert.is((await summary('authored')).author, 'Ada Lovelace', 'follows a change of the name');
  await admin.delete(`/api/admin/users/${ada.id}`);
  assert.is((await summary('authored')).author, 'Ada Admin', 'the snapshot taken at creation');
});

test('audit: who, when and what for each change; reason kept; newest first; filtered by key; limited', async () => {
  const started = Date.now();
  await create('audited', { name: 'Audited', category: 'tools' });
  await admin.put(`${ADMIN_BASE}/audited`, { name: 'Audited Twice', description: 'now described' });
  await publish('audited', '1.0.0');
  await yank('audited', '1.0.0', '?reason=leaks%20credentials');
  await unyank('audited', '1.0.0');
  const me = (await admin.get('/api/auth/me')).body.data;

  const records = await auditOf('audited');
  assert.equal(
    records.map((record) => [record.action, record.version ?? null]),
    [
      ['unyank', '1.0.0'],
      ['yank', '1.0.0'],
      ['publish', '1.0.0'],
      ['update', null],
      ['create', null],
    ],
  );
  for (const record of records) {
    assert.equal(record.actor, { id: me.id, email: me.email, fullName: me.fullName });
    assert.is(record.extensionKey, 'audited');
    assert.match(record.id, /^[0-9a-f-]{36}$/);
    const at = Date.parse(record.at);
    assert.ok(at >= started - 1000 && at <= Date.now() + 1000, record.at);
  }
  assert.is(records[1]!.reason, 'leaks credentials');
  assert.equal(records[3]!.changes, {
    name: { from: 'Audited', to: 'Audited Twice' },
    description: { from: '', to: 'now described' },
  });
  assert.equal(records[4]!.changes!.name, { from: null, to: 'Audited' });

  assert.equal(
    (await auditOf('audited', 2)).map((record) => record.action),
    ['unyank', 'yank'],
  );
  const everything = await admin.get('/api/admin/audit');
  assert.ok(everything.body.data.length > 5);
  assert.ok(everything.body.data.length <= 50, 'default limit 50');
  const times = everything.body.data.map((record: AuditRecord) => record.at);
  assert.equal(times, [...times].sort().reverse(), 'newest first');
  assert.is((await admin.get('/api/admin/audit?extensionKey=never-touched')).status, 404, 'a typo is not an empty trail');
  assert.is((await admin.get('/api/admin/audit?limit=1001')).status, 400);
  assert.is((await admin.get('/api/admin/audit?extensionKey=Not%20A%20Key')).status, 400);
});

test('audit: filtered by version and action; the actor named while the user exists, by email after', async () => {
  const publisher = await createUser(t, 'publisher@example.test', { roles: ['ADMIN'], fullName: 'Pat Publisher' });
  await create('named', { name: 'Named' });
  await publish('named', '1.0.0', {}, publisher);
  await publish('named', '1.1.0', {}, publisher);
  await yank('named', '1.0.0', '?reason=broken%20build');
  const me = (await admin.get('/api/auth/me')).body.data;
  const trail = async (query: string) => {
    const result = await admin.get(`/api/admin/audit?extensionKey=named&${query}`);
    assert.is(result.status, 200, result.text);
    return result.body.data as AuditRecord[];
  };
  const ofVersion = await trail('version=1.0.0');
  assert.equal(
    ofVersion.map((record) => [record.action, record.version, record.reason ?? null, record.actor.fullName]),
    [
      ['yank', '1.0.0', 'broken build', me.fullName],
      ['publish', '1.0.0', null, 'Pat Publisher'],
    ],
  );
  assert.equal(
    (await trail('action=publish')).map((record) => record.version),
    ['1.1.0', '1.0.0'],
  );
  assert.equal((await trail('version=1.1.0&action=yank')).length, 0);
  assert.is((await admin.get('/api/admin/audit?version=v1')).status, 400);
  assert.is((await admin.get('/api/admin/audit?action=delete')).status, 400);

  const paged = await admin.get('/api/admin/audit?extensionKey=named&action=publish&limit=1');
  const next = await admin.get(`/api/admin/audit?limit=1&cursor=${paged.body.meta.nextCursor}&extensionKey=named&action=publish`);
  assert.equal(next.body.data.map((record: AuditRecord) => record.version), ['1.0.0'], next.text);
  const elsewhere = await admin.get(`/api/admin/audit?limit=1&cursor=${paged.body.meta.nextCursor}&extensionKey=named`);
  assert.is(elsewhere.status, 400, 'a cursor holds for its own filter');

  const publisherId = publisher.id;
  assert.is((await admin.delete(`/api/admin/users/${publisherId}`)).status, 204);
  assert.equal((await trail('version=1.1.0'))[0]!.actor, { id: publisherId, email: 'publisher@example.test' });
});

test('the audit trail reads older records from its file when memory holds only the most recent ones', async () => {
  const file = join(await tempDir(), 'audit.log');
  const record = (n: number, extensionKey: string): AuditRecord => ({
    id: String(n),
    at: new Date(1_700_000_000_000 + n).toISOString(),
    actor: { id: 'u', email: 'u@example.test' },
    action: 'publish',
    extensionKey,
    version: `1.0.${n}`,
  });
  const trail = await AuditTrail.open(file, 3);
  for (let n = 0; n < 20; n += 1) await trail.append(record(n, n % 5 === 0 ? 'rare' : 'common'));
  await trail.close();

  const reopened = await AuditTrail.open(file, 3);
  const ids = async (extensionKey: string | undefined, limit: number) =>
    (await reopened.read({ extensionKey, limit })).map((found) => found.id);
  assert.equal(await ids(undefined, 2), ['19', '18'], 'served from memory');
  assert.equal(await ids('rare', 10), ['15', '10', '5', '0'], 'older than the window: read from the file');
  assert.equal(await ids('rare', 2), ['15', '10']);
  assert.equal(await ids(undefined, 20), Array.from({ length: 20 }, (_, n) => String(19 - n)));
  await reopened.append(record(20, 'rare'));
  assert.equal(await ids('rare', 2), ['20', '15']);
  await reopened.close();
  assert.is(readFileSync(file, 'utf8').trim().split('\n').length, 21);
});

test('the service interface: has, latestVersion and versionRecord', async () => {
  await create('service-api');
  await publish('service-api', '1.0.0', { requiresPlatform: '0.1.0' });
  await publish('service-api', '1.1.0-beta.1');
  const { catalog } = t.daemon.services;
  assert.is(catalog.has('service-api'), true);
  assert.is(catalog.has('absent-ext'), false);
  assert.is(catalog.latestVersion('service-api'), '1.0.0');
  assert.is(catalog.latestVersion('defaults'), null);
  assert.is(catalog.versionRecord('service-api', '1.0.0').requiresPlatform, '0.1.0');
  assert.equal(Object.keys(catalog.versionRecord('service-api', '1.0.0')).sort(), RECORD_FIELDS);
  const unknown = [
    () => catalog.latestVersion('absent-ext'),
    () => catalog.versionRecord('absent-ext', '1.0.0'),
    () => catalog.versionRecord('service-api', '9.0.0'),
  ];
  for (const call of unknown) {
    try {
      call();
      assert.unreachable('an unknown key or version');
    } catch (error) {
      assert.instance(error, DomainError);
      assert.is((error as DomainError).code, 'NOT_FOUND');
    }
  }
});

test('a restart keeps extensions, versions, yanks, search and the audit trail', async () => {
  await create('durable', { name: 'Durable Goods', description: 'survives restarts', category: 'storage' });
  await publish('durable', '1.0.0');
  await publish('durable', '1.1.0');
  await yank('durable', '1.1.0', '?reason=bad');
  const before = {
    detail: await detail('durable'),
    record: (await t.anon.get(`${BROWSE_BASE}/durable/versions/1.0.0`)).body.data,
    list: (await t.anon.get(`${BROWSE_BASE}?limit=500`)).body,
    categories: (await t.anon.get('/api/marketplace/categories')).body.data,
    audit: await auditOf('durable'),
  };

  t = await t.restart();
  admin = await t.admin();
  assert.equal(await detail('durable'), before.detail);
  assert.equal((await t.anon.get(`${BROWSE_BASE}/durable/versions/1.0.0`)).body.data, before.record);
  const list = (await t.anon.get(`${BROWSE_BASE}?limit=500`)).body;
  assert.equal([list.data, list.meta], [before.list.data, before.list.meta]);
  assert.equal((await t.anon.get('/api/marketplace/categories')).body.data, before.categories);
  assert.equal(await auditOf('durable'), before.audit);
  const found = (await t.anon.get(`${BROWSE_BASE}?search=SURVIVES%20durable`)).body.data;
  assert.equal(found.map((item: { extensionKey: string }) => item.extensionKey), ['durable'], 'the search index is rebuilt');
  assert.is((await publish('durable', '1.1.0')).status, 409, 'the yanked number is still reserved');
  assert.is((await publish('durable', '1.2.0')).status, 201, 'and the catalog still takes changes');
});

filesOnly(test)('one file per extension under catalog/; a corrupt one stops the start, naming it, untouched (files only: reads and breaks the catalog files)', async () => {
  const file = join(t.dataDir, 'catalog', 'durable.json');
  const stored = JSON.parse(readFileSync(file, 'utf8'));
  assert.is(stored.schemaVersion, 1);
  assert.is(stored.extension.extensionKey, 'durable');
  await t.stop();
  writeFileSync(file, '{"schemaVersion":1,"extension":');
  try {
    await startTestDaemon({}, t.dataDir);
    assert.unreachable('started on a corrupt catalog file');
  } catch (error) {
    assert.is((error as Error).name, 'StartupError');
    assert.match((error as Error).message, file);
  }
  assert.equal(openFilesUnder(t.dataDir), [], 'a refused start closes what it had opened');
  assert.is(readFileSync(file, 'utf8'), '{"schemaVersion":1,"extension":');
  writeFileSync(file, JSON.stringify(stored));
  t = await startTestDaemon({}, t.dataDir);
  assert.is((await detail('durable')).extensionKey, 'durable');
});

test('--seed loads the development catalog, attributed to the first administrator', async () => {
  const seeded = await startTestDaemon({ seed: true });
  try {
    const list = (await seeded.anon.get(`${BROWSE_BASE}?limit=500`)).body;
    const keys = list.data.map((item: { extensionKey: string }) => item.extensionKey);
    for (const key of ['crm', 'chat']) assert.ok(keys.includes(key), `${key} is in the seed`);
    assert.ok(list.meta.total >= 8, `${list.meta.total} extensions`);
    assert.ok((await seeded.anon.get('/api/marketplace/categories')).body.data.length >= 5, 'several categories');
    assert.match(seeded.logs.join(''), `seed: added ${list.meta.total} extensions from ${SEED_FILE} (crm, chat,`);

    let yanked = 0;
    let prereleases = 0;
    for (const key of keys) {
      const current = (await seeded.anon.get(`${BROWSE_BASE}/${key}`)).body.data;
      assert.ok(current.versions.length >= 2, `${key} has several versions`);
      yanked += current.versions.filter((entry: { yanked: boolean }) => entry.yanked).length;
      prereleases += current.versions.filter((entry: { version: string }) => entry.version.includes('-')).length;
      const latest = (await seeded.anon.get(`${BROWSE_BASE}/${key}/versions/${current.latestVersion}`)).body.data;
      const installable = (version: string | null) => version === null || semver.lte(version, PLATFORM_VERSION);
      assert.ok(installable(latest.requiresPlatform), `${key} ${latest.version} runs on this platform`);
    }
    assert.ok(yanked >= 1, 'a yanked version');
    const incompatible = (await seeded.anon.get(`${BROWSE_BASE}/invoicing/versions/2.0.0-beta.1`)).body.data;
    assert.ok(semver.gt(incompatible.requiresPlatform, PLATFORM_VERSION), 'and one example needing a newer platform');
    assert.ok(prereleases >= 2, 'prereleases');
    const crm = (await seeded.anon.get(`${BROWSE_BASE}/crm`)).body.data;
    assert.ok(crm.permissions.includes('crm.deals.read'));
    const oldest = (await seeded.anon.get(`${BROWSE_BASE}/crm/versions/${crm.versions.at(-1).version}`)).body.data;
    assert.ok(oldest.releaseDate < todayUtc(), `historical release dates (${oldest.releaseDate})`);

    const seedAdmin = await seeded.admin();
    const me = (await seedAdmin.get('/api/auth/me')).body.data;
    const audit = (await seedAdmin.get('/api/admin/audit?limit=1000')).body.data as AuditRecord[];
    assert.ok(audit.length > keys.length);
    assert.ok(audit.every((record) => record.actor.id === me.id));
    assert.is((await seeded.anon.get(`${BROWSE_BASE}?search=crm`)).body.data[0].author, 'Administrator');

    const restarted = await seeded.restart();
    try {
      const again = (await restarted.anon.get(`${BROWSE_BASE}?limit=500`)).body;
      assert.equal(again.data, list.data, 'the seed survives a restart and is not loaded twice');
      const auditAgain = (await (await restarted.admin()).get('/api/admin/audit?limit=1000')).body.data;
      assert.is(auditAgain.length, audit.length, 'nothing was recorded by the second start');
      assert.match(restarted.logs.join(''), `seed: added 0 extensions from ${SEED_FILE}; skipped ${keys.length} already in the catalog`);
    } finally {
      await restarted.destroy();
    }
  } finally {
    await seeded.destroy().catch(() => undefined);
  }
});

test('--seed adds the seed extensions the catalog lacks and leaves the others as they are', async () => {
  const own = await startTestDaemon();
  try {
    const ownAdmin = await own.admin();
    await ownAdmin.post(ADMIN_BASE, { extensionKey: 'weather', name: 'Weather' });
    await ownAdmin.post(ADMIN_BASE, { extensionKey: 'crm', name: 'My own CRM' });
    const restarted = await own.restart({ seed: true });
    try {
      const keys = (await restarted.anon.get(`${BROWSE_BASE}?limit=500`)).body.data.map((item: { extensionKey: string }) => item.extensionKey);
      for (const key of ['weather', 'crm', 'chat', 'github-sync']) assert.ok(keys.includes(key), `${key} is in the catalog`);
      const crm = (await restarted.anon.get(`${BROWSE_BASE}/crm`)).body.data;
      assert.is(crm.name, 'My own CRM', 'an extension already there is not touched');
      assert.equal(crm.versions, []);
      const line = restarted.logs.join('').split('\n').find((text) => text.includes('seed: added'));
      assert.match(line!, /seed: added 9 extensions from .* \(chat, .*\); skipped 1 already in the catalog \(crm\)/);
      assert.is((await (await restarted.admin()).post('/api/admin/workspaces', { id: 'acme', name: 'Acme' })).status, 201);
      const installed = await (await restarted.admin()).post('/api/workspaces/acme/extensions', { extensionKey: 'chat', grantPermissions: ['chat.messages.write'] });
      assert.is(installed.status, 201, installed.text);
      assert.equal(
        installed.body.data.subscriptions.map((subscription: { eventKey: string; kind: string }) => [subscription.eventKey, subscription.kind]),
        [['platform.notification', 'IN_PROCESS']],
        'the seed chat’s manifest wires its in-process subscription',
      );
    } finally {
      await restarted.destroy();
    }
  } finally {
    await own.destroy().catch(() => undefined);
  }
});

test('a seed file with any invalid entry stops the start and loads nothing', async () => {
  const fresh = await startTestDaemon();
  try {
    const file = join(await tempDir(), 'catalog.json');
    const version = { version: '1.0.0', artifactUrl: 'https://a.example.test/x.jar' };
    writeFileSync(
      file,
      JSON.stringify({
        extensions: [
          { extensionKey: 'good-one', name: 'Good', versions: [version] },
          { extensionKey: 'bad-one', name: 'Bad', permissions: ['good-one.items.read'], versions: [version] },
        ],
      }),
    );
    const { catalog, auth } = fresh.daemon.services;
    try {
      await seedCatalog(catalog, auth.users, file);
      assert.unreachable('loaded an invalid seed');
    } catch (error) {
      assert.is((error as Error).name, 'StartupError');
      assert.match((error as Error).message, file);
      assert.match((error as Error).message, 'good-one.items.read');
    }
    assert.is(catalog.size, 0, 'not even the valid extension before it');
  } finally {
    await fresh.destroy();
  }
});

test.run();
