import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace, install, publishExtension } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { filesOnly } from './helpers/postgres.js';

let t: TestDaemon;
let admin: Api;

test.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
  await publishExtension(admin, 'crm', '1.0.0');
  await publishExtension(admin, 'crm', '1.1.0');
  await publishExtension(admin, 'crm', '2.0.0-beta.1');
  await publishExtension(admin, 'billing', '1.0.0', { requiresPlatform: '9.0.0' });
  await publishExtension(admin, 'billing', '0.9.0', { requiresSdk: '2.0.0' });
  await publishExtension(admin, 'billing', '0.8.0', { requiresPlatform: '0.1.0', requiresSdk: '1.0.0' });
  await createWorkspace(admin, 'acme');
});
test.after(async () => {
  await t.destroy();
});

test('health shows the platform and plugin SDK versions that installations are checked against', async () => {
  const health = await t.anon.get('/api/health');
  assert.equal(health.body.data, { status: 'ok', version: '0.1.0', sdkVersion: '1.0.0' });
});

test('workspaces: created by an ADMIN, ids unique, visible to members only', async () => {
  const duplicate = await admin.post('/api/admin/workspaces', { id: 'acme', name: 'Again' });
  assert.is(duplicate.status, 409);
  assert.is((await admin.post('/api/admin/workspaces', { id: 'Bad_Id', name: 'X' })).status, 400);

  const dana = await createUser(t, 'dana@example.test');
  assert.is((await dana.post('/api/admin/workspaces', { id: 'danas', name: 'D' })).status, 403);
  assert.equal((await dana.get('/api/workspaces')).body.data, []);
  assert.is((await dana.get('/api/workspaces/acme')).status, 403);

  const added = await admin.put(`/api/admin/workspaces/acme/members/${dana.id}`);
  assert.is(added.status, 200);
  assert.equal(added.body.data.members, [dana.id]);
  assert.equal((await admin.put(`/api/admin/workspaces/acme/members/${dana.id}`)).body.data.members, [dana.id], 'idempotent');
  assert.equal((await dana.get('/api/workspaces')).body.data.map((w: { id: string }) => w.id), ['acme']);
  assert.is((await dana.get('/api/workspaces/acme')).status, 200);

  assert.is((await admin.put('/api/admin/workspaces/acme/members/00000000-0000-4000-8000-000000000000')).status, 404, 'unknown user');
  assert.is((await admin.put(`/api/admin/workspaces/nowhere/members/${dana.id}`)).status, 404, 'unknown workspace');

  assert.is((await admin.delete(`/api/admin/workspaces/acme/members/${dana.id}`)).status, 204);
  assert.is((await dana.get('/api/workspaces/acme')).status, 403);
});

test("a workspace's members are listed by name to its members; a deleted user drops out", async () => {
  await createWorkspace(admin, 'named');
  const erin = await createUser(t, 'erin@example.test', { fullName: 'Erin Example' });
  const finn = await createUser(t, 'finn@example.test', { fullName: 'Finn Fellow' });
  const outsider = await createUser(t, 'olly@example.test');
  for (const member of [erin, finn]) assert.is((await admin.put(`/api/admin/workspaces/named/members/${member.id}`)).status, 200);

  const listed = await erin.get('/api/workspaces/named/members');
  assert.is(listed.status, 200, listed.text);
  assert.equal(listed.body.data, [
    { id: erin.id, email: 'erin@example.test', fullName: 'Erin Example' },
    { id: finn.id, email: 'finn@example.test', fullName: 'Finn Fellow' },
  ]);
  assert.is((await outsider.get('/api/workspaces/named/members')).status, 403, 'only its members (and ADMINs)');
  assert.is((await admin.get('/api/workspaces/nowhere/members')).status, 404);
  assert.is((await admin.get('/api/workspaces/Not_A_Slug/members')).status, 400);

  assert.is((await admin.delete(`/api/admin/users/${finn.id}`)).status, 204);
  assert.equal((await admin.get('/api/workspaces/named/members')).body.data.map((member: { id: string }) => member.id), [erin.id]);
});

test('installing without a version takes the latest stable version', async () => {
  await createWorkspace(admin, 'latest');
  const result = await admin.post('/api/workspaces/latest/extensions', { extensionKey: 'crm' });
  assert.is(result.status, 201);
  assert.equal(Object.keys(result.body.data).sort(), ['enabled', 'extensionKey', 'grantedPermissions', 'installedAt', 'missingConfiguration', 'subscriptions', 'version', 'workspaceId']);
  assert.is(result.body.data.version, '1.1.0');
  assert.is(result.body.data.enabled, true);
  const again = await admin.post('/api/workspaces/latest/extensions', { extensionKey: 'crm', version: '1.0.0' });
  assert.is(again.status, 409, 'already installed');
});

test('installation rules: unknown 404, yanked 409 VERSION_YANKED, too new 409 INCOMPATIBLE_VERSION', async () => {
  await createWorkspace(admin, 'rules');
  const unknownExtension = await admin.post('/api/workspaces/rules/extensions', { extensionKey: 'nothing' });
  assert.is(unknownExtension.status, 404);
  const unknownVersion = await admin.post('/api/workspaces/rules/extensions', { extensionKey: 'crm', version: '7.7.7' });
  assert.is(unknownVersion.status, 404);

  assert.is((await admin.delete('/api/admin/marketplace/extensions/crm/versions/1.0.0')).status, 204);
  const yanked = await admin.post('/api/workspaces/rules/extensions', { extensionKey: 'crm', version: '1.0.0' });
  assert.is(yanked.status, 409);
  assert.is(yanked.body.code, 'VERSION_YANKED');

  for (const [version, needs] of [
    ['1.0.0', 'platform 9.0.0'],
    ['0.9.0', 'plugin SDK 2.0.0'],
  ] as const) {
    const result = await admin.post('/api/workspaces/rules/extensions', { extensionKey: 'billing', version });
    assert.is(result.status, 409, version);
    assert.is(result.body.code, 'INCOMPATIBLE_VERSION', version);
    assert.match(result.body.message ?? '', needs);
  }
  assert.is((await admin.post('/api/workspaces/rules/extensions', { extensionKey: 'billing', version: '0.8.0' })).status, 201);
  assert.is((await admin.put('/api/admin/marketplace/extensions/crm/versions/1.0.0/unyank')).status, 200);
});

test('yanking never touches an existing installation', async () => {
  await createWorkspace(admin, 'keeps');
  await install(admin, 'keeps', 'crm', '1.0.0');
  assert.is((await admin.delete('/api/admin/marketplace/extensions/crm/versions/1.0.0')).status, 204);
  const list = await admin.get('/api/workspaces/keeps/extensions');
  assert.equal(
    list.body.data.map((i: { extensionKey: string; version: string; enabled: boolean }) => [i.extensionKey, i.version, i.enabled]),
    [['crm', '1.0.0', true]],
  );
  const toYanked = await admin.patch('/api/workspaces/keeps/extensions/crm', { enabled: false });
  assert.is(toYanked.status, 200, 'an installation of a yanked version can still be disabled');
  assert.is((await admin.put('/api/admin/marketplace/extensions/crm/versions/1.0.0/unyank')).status, 200);
});

test('enable, disable, upgrade and uninstall', async () => {
  await createWorkspace(admin, 'cycle');
  await install(admin, 'cycle', 'crm', '1.0.0');
  const disabled = await admin.patch('/api/workspaces/cycle/extensions/crm', { enabled: false });
  assert.is(disabled.body.data.enabled, false);
  const upgraded = await admin.patch('/api/workspaces/cycle/extensions/crm', { version: '1.1.0', enabled: true });
  assert.is(upgraded.status, 200);
  assert.is(upgraded.body.data.version, '1.1.0');
  assert.is(upgraded.body.data.enabled, true);
  const incompatible = await admin.patch('/api/workspaces/cycle/extensions/crm', { version: '9.9.9' });
  assert.is(incompatible.status, 404);
  assert.is((await admin.patch('/api/workspaces/cycle/extensions/crm', {})).status, 400, 'nothing to change');
  assert.is((await admin.delete('/api/workspaces/cycle/extensions/crm')).status, 204);
  assert.equal((await admin.get('/api/workspaces/cycle/extensions')).body.data, []);
  assert.is((await admin.delete('/api/workspaces/cycle/extensions/crm')).status, 404);
});

test('installations: members read them, only an ADMIN changes them', async () => {
  const member = await createUser(t, 'installer@example.test');
  await admin.put(`/api/admin/workspaces/acme/members/${member.id}`);
  assert.is((await member.get('/api/workspaces/acme/extensions')).status, 200);
  assert.is((await member.post('/api/workspaces/acme/extensions', { extensionKey: 'crm' })).status, 403);
  const outsider = await createUser(t, 'outsider@example.test');
  assert.is((await outsider.get('/api/workspaces/acme/extensions')).status, 403);
});

filesOnly(test)('subscriptions: the signing secret is shown once and stored sealed (files only: reads workspaces.json)', async () => {
  await install(admin, 'acme', 'crm', '1.1.0');
  const created = await admin.post('/api/workspaces/acme/subscriptions', {
    eventKey: 'crm.deal.closed',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: 'http://127.0.0.1:9/hooks',
  });
  assert.is(created.status, 201);
  const { signingSecret, ...subscription } = created.body.data;
  assert.match(signingSecret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.is(Buffer.from(signingSecret.slice(6), 'base64').length, 32);
  assert.equal(Object.keys(subscription).sort(), [
    'createdAt', 'deliveryUrl', 'disabledReason', 'enabled', 'eventKey', 'extensionKey', 'id', 'kind', 'serviceBaseUrl', 'workspaceId',
  ]);

  const list = await admin.get('/api/workspaces/acme/subscriptions');
  assert.equal(list.body.data, [subscription]);
  assert.not.match(list.text, 'whsec_');
  const stored = readFileSync(join(t.dataDir, 'workspaces.json'), 'utf8');
  assert.not.match(stored, signingSecret.slice(6), 'the secret is not stored in clear');
  assert.match(stored, 'enc:v1:');

  const duplicate = await admin.post('/api/workspaces/acme/subscriptions', {
    eventKey: 'crm.deal.closed',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: 'http://127.0.0.1:9/hooks',
  });
  assert.is(duplicate.status, 409);
  assert.is((await admin.delete(`/api/workspaces/acme/subscriptions/${subscription.id}`)).status, 204);
  assert.equal((await admin.get('/api/workspaces/acme/subscriptions')).body.data, []);
  assert.is((await admin.delete(`/api/workspaces/acme/subscriptions/${subscription.id}`)).status, 404);
});

test('subscriptions are validated: URL for external services, a plugin for in-process, a known extension', async () => {
  const subscribe = (body: Record<string, unknown>) => admin.post('/api/workspaces/acme/subscriptions', body);
  const noUrl = await subscribe({ eventKey: 'crm.deal.closed', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE' });
  assert.is(noUrl.status, 400);
  assert.is(noUrl.body.meta.issues[0].path, 'serviceBaseUrl');
  const ftp = await subscribe({ eventKey: 'crm.deal.closed', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'ftp://x.test' });
  assert.is(ftp.status, 400);
  const noPlugin = await subscribe({ eventKey: 'crm.deal.closed', extensionKey: 'crm', kind: 'IN_PROCESS' });
  assert.is(noPlugin.status, 400);
  assert.match(noPlugin.body.message ?? '', 'no in-process plugin of crm handles crm.deal.closed');
  const badKey = await subscribe({ eventKey: 'nodots', extensionKey: 'crm', kind: 'IN_PROCESS' });
  assert.is(badKey.status, 400);
  assert.is(badKey.body.meta.issues[0].path, 'eventKey');
  const unknown = await subscribe({ eventKey: 'a.b', extensionKey: 'ghost', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://x.test' });
  assert.is(unknown.status, 404);
  const badKind = await subscribe({ eventKey: 'a.b', extensionKey: 'crm', kind: 'CARRIER_PIGEON' });
  assert.is(badKind.status, 400);
});

test('check order on workspace routes: 401, 403, 400, 404', async () => {
  const member = await createUser(t, 'order-ws@example.test');
  assert.is((await t.anon.post('/api/workspaces/ghost/extensions', { extensionKey: 'BAD' })).status, 401);
  assert.is((await member.post('/api/workspaces/ghost/extensions', { extensionKey: 'BAD' })).status, 403);
  assert.is((await admin.post('/api/workspaces/ghost/extensions', { extensionKey: 'BAD' })).status, 400);
  assert.is((await admin.post('/api/workspaces/ghost/extensions', { extensionKey: 'crm' })).status, 404);
  assert.is((await member.get('/api/workspaces/ghost/extensions')).status, 403, 'a non-member learns nothing of a workspace');
  assert.is((await admin.get('/api/workspaces/ghost/extensions')).status, 404);
});

test('workspaces, installations and subscriptions survive a restart', async () => {
  await createWorkspace(admin, 'durable');
  await install(admin, 'durable', 'crm');
  const sub = await admin.post('/api/workspaces/durable/subscriptions', {
    eventKey: 'crm.deal.closed',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: 'http://127.0.0.1:9',
  });
  t = await t.restart();
  admin = await t.admin();
  assert.is((await admin.get('/api/workspaces/durable')).status, 200);
  assert.is((await admin.get('/api/workspaces/durable/extensions')).body.data[0].version, '1.1.0');
  assert.is((await admin.get('/api/workspaces/durable/subscriptions')).body.data[0].id, sub.body.data.id);
});

test.run();
