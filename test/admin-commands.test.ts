import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, createWorkspace, install, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import { runCli } from './helpers/cli.js';
import { call, type Api } from './helpers/http.js';
import { startSubscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';
import { filesOnly } from './helpers/postgres.js';

let t: TestDaemon;
let admin: Api & { token: string };
let config: string;

test.before(async () => {
  t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [5] } });
  admin = await t.admin();
  config = await tempDir('platform-admin-cli-');
  await publishExtension(admin, 'crm', '1.0.0', { changelog: 'First release: deals and contacts.' });
  await publishExtension(admin, 'crm', '1.1.0');
});
test.after(async () => {
  await t.destroy();
});

/** The built CLI against the test daemon, as the ADMIN unless another token is given. */
const cli = (args: string[], options: { input?: string; token?: string } = {}) =>
  runCli(args, { input: options.input, env: { XDG_CONFIG_HOME: config, PLATFORM_URL: t.url, PLATFORM_TOKEN: options.token ?? admin.token } });

test('DELETE /api/admin/users/{id}: refuses yourself (409); a deleted user loses sessions and memberships', async () => {
  const self = (await admin.get('/api/auth/me')).body.data;
  const refused = await admin.delete(`/api/admin/users/${self.id}`);
  assert.is(refused.status, 409);
  assert.match(String(refused.body.message), 'your own account');

  const dana = await createUser(t, 'dana@example.test');
  await createWorkspace(admin, 'team');
  await admin.put(`/api/admin/workspaces/team/members/${dana.id}`);
  assert.is((await admin.delete(`/api/admin/users/${dana.id}`)).status, 204);
  assert.is((await dana.get('/api/auth/me')).status, 401, 'her token stops working');
  assert.equal((await admin.get('/api/workspaces/team')).body.data.members, [], 'her membership is gone');
  assert.is((await admin.delete(`/api/admin/users/${dana.id}`)).status, 404);
});

test('POST /api/admin/users/{id}/password sets the password and ends that user\'s sessions', async () => {
  const erin = await createUser(t, 'erin@example.test');
  assert.is((await admin.post(`/api/admin/users/${erin.id}/password`, { password: 'short' })).status, 400);
  assert.is((await erin.get('/api/auth/me')).status, 200, 'a refused reset changes nothing');
  const reset = await admin.post(`/api/admin/users/${erin.id}/password`, { password: 'reset-password-1' });
  assert.is(reset.status, 200, reset.text);
  assert.equal(reset.body.data, { id: erin.id, email: 'erin@example.test', fullName: 'erin', roles: ['USER'], active: true });
  assert.is((await erin.get('/api/auth/me')).status, 401);
  assert.is((await t.anon.post('/api/auth/login', { email: 'erin@example.test', password: 'reset-password-1' })).status, 200);
  assert.is((await erin.post(`/api/admin/users/${erin.id}/password`, { password: 'whatever-1234' })).status, 401);
});

test('users set-roles, reset-password and delete from the CLI', async () => {
  await createUser(t, 'fox@example.test');
  const roles = await cli(['users', 'set-roles', 'fox@example.test', '--role', 'admin', 'user']);
  assert.is(roles.code, 0, roles.stderr);
  assert.match(roles.stdout, 'fox@example.test now has ADMIN, USER');

  const reset = await cli(['users', 'reset-password', 'fox@example.test', '--password-stdin'], { input: 'fox-new-password\n' });
  assert.is(reset.code, 0, reset.stderr);
  assert.is((await t.anon.post('/api/auth/login', { email: 'fox@example.test', password: 'fox-new-password' })).status, 200);
  const noInput = await cli(['users', 'reset-password', 'fox@example.test']);
  assert.is(noInput.code, 2, 'without a terminal, no prompt: a usage error');

  const deleted = await cli(['users', 'delete', 'fox@example.test', '--yes']);
  assert.is(deleted.code, 0, deleted.stderr);
  assert.match(deleted.stdout, 'deleted fox@example.test');
  const self = await cli(['users', 'delete', ADMIN.email, '--yes']);
  assert.is(self.code, 1);
  assert.match(self.stderr, 'your own account');
});

filesOnly(test)('users reset-password --data-dir: offline, refused while the daemon runs, then works and ends sessions (files only: the offline command edits the users of the data directory)', async () => {
  const own = await startTestDaemon();
  const session = await own.admin();
  const offline = (dir: string) =>
    runCli(['users', 'reset-password', ADMIN.email, '--data-dir', dir, '--password-stdin'], {
      input: 'offline-password-1\n',
      env: { PLATFORM_BCRYPT_COST: '4' },
    });
  try {
    const running = await offline(own.dataDir);
    assert.is(running.code, 1);
    assert.match(running.stderr, 'in use by another platform daemon');
    await own.stop();
    const done = await offline(own.dataDir);
    assert.is(done.code, 0, done.stderr);
    assert.match(done.stdout, `reset the password of ${ADMIN.email}`);
    const mistyped = await offline(join(own.dataDir, 'nope'));
    assert.is(mistyped.code, 1);
    assert.match(mistyped.stderr, 'does not exist');
  } finally {
    await own.stop();
  }
  const again = await startTestDaemon({}, own.dataDir);
  try {
    assert.is((await call(again.url, 'GET', '/api/auth/me', { token: session.token })).status, 401, 'old sessions ended');
    assert.is((await again.anon.post('/api/auth/login', { email: ADMIN.email, password: 'offline-password-1' })).status, 200);
  } finally {
    await again.destroy();
  }
});

test('workspaces: rename (PATCH), delete refused while extensions are installed unless forced', async () => {
  await createWorkspace(admin, 'gone');
  const renamed = await admin.patch('/api/admin/workspaces/gone', { name: 'Going' });
  assert.is(renamed.status, 200);
  assert.is(renamed.body.data.name, 'Going');
  assert.is((await admin.patch('/api/admin/workspaces/gone', { name: '' })).status, 400);
  assert.is((await admin.patch('/api/admin/workspaces/nowhere', { name: 'X' })).status, 404);

  await install(admin, 'gone', 'crm');
  const failing = await startSubscriber(() => ({ status: 500 }));
  try {
    await subscribeExternal(admin, 'gone', 'crm.deal.closed', 'crm', failing.url);
    await admin.post('/api/workspaces/gone/events/publish', { eventKey: 'crm.deal.closed', payload: {} });
    await waitFor('a dead letter', async () => (await admin.get('/api/admin/dead-letters?workspaceId=gone')).body.data.length);
  } finally {
    await failing.close();
  }
  const refused = await admin.delete('/api/admin/workspaces/gone');
  assert.is(refused.status, 409);
  assert.match(String(refused.body.message), 'crm');
  assert.is((await admin.get('/api/workspaces/gone')).status, 200, 'a refused delete changes nothing');
  assert.is((await admin.delete('/api/admin/workspaces/gone?force=maybe')).status, 400);

  const forced = await admin.delete('/api/admin/workspaces/gone?force=true');
  assert.is(forced.status, 200);
  assert.equal(forced.body.data, { id: 'gone', clearedWebhooks: [] });
  assert.is((await admin.get('/api/workspaces/gone')).status, 404);
  const letters = (await admin.get('/api/admin/dead-letters')).body.data as Array<{ event: { tenantId: string } }>;
  assert.equal(letters.filter((letter) => letter.event.tenantId === 'gone'), [], 'its dead letters went with it');
  await createWorkspace(admin, 'gone');
  assert.equal((await admin.get('/api/workspaces/gone/subscriptions')).body.data, [], 'a new workspace of that id starts empty');
  assert.equal((await admin.get('/api/workspaces/gone/extensions')).body.data, []);
  assert.is((await admin.delete('/api/admin/workspaces/gone')).status, 200, 'an empty workspace needs no force');
});

test('workspaces show, rename and delete from the CLI', async () => {
  await createWorkspace(admin, 'shown');
  const gil = await createUser(t, 'gil@example.test');
  await admin.put(`/api/admin/workspaces/shown/members/${gil.id}`);
  await install(admin, 'shown', 'crm', '1.0.0');
  await subscribeExternal(admin, 'shown', 'crm.deal.closed', 'crm', 'https://crm.example.test/hooks');
  const shown = await cli(['workspaces', 'show', 'shown']);
  assert.is(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, 'members: gil@example.test');
  assert.match(shown.stdout, /crm\s+1\.0\.0\s+yes/);
  assert.match(shown.stdout, 'https://crm.example.test/hooks/events');
  const asMember = await cli(['workspaces', 'show', 'shown'], { token: gil.token });
  assert.is(asMember.code, 0, asMember.stderr);
  assert.match(asMember.stdout, `members: ${gil.id}`, 'a member who may not list users sees ids');

  const renamed = await cli(['workspaces', 'rename', 'shown', '--name', 'Shown Inc']);
  assert.is(renamed.code, 0, renamed.stderr);
  assert.is((await admin.get('/api/workspaces/shown')).body.data.name, 'Shown Inc');
  const refused = await cli(['workspaces', 'delete', 'shown', '--yes']);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, 'installed extensions');
  const forced = await cli(['workspaces', 'delete', 'shown', '--force', '--yes']);
  assert.is(forced.code, 0, forced.stderr);
  assert.is((await admin.get('/api/workspaces/shown')).status, 404);
});

test('subscriptions show their delivery URL; subscribing an extension not installed warns', async () => {
  await createWorkspace(admin, 'subs');
  const created = await admin.post('/api/workspaces/subs/subscriptions', {
    eventKey: 'crm.deal.closed',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: 'https://crm.example.test/hooks/',
  });
  assert.is(created.status, 201);
  assert.is(created.body.data.deliveryUrl, 'https://crm.example.test/hooks/events');
  assert.equal(created.body.meta.warnings, ['crm is not installed in subs: nothing is delivered to this subscription until it is']);
  assert.is((await admin.get('/api/workspaces/subs/subscriptions')).body.data[0].deliveryUrl, 'https://crm.example.test/hooks/events');

  const viaCli = await cli(['subscriptions', 'add', 'subs', '--event', 'crm.deal.opened', '--extension', 'crm', '--service-url', 'https://svc.example.test']);
  assert.is(viaCli.code, 0, viaCli.stderr);
  assert.match(viaCli.stdout, 'deliveries are POSTed to https://svc.example.test/events');
  assert.match(viaCli.stderr, 'warning: crm is not installed in subs');
  const listed = await cli(['subscriptions', 'list', 'subs']);
  assert.match(listed.stdout, 'DELIVERED TO');
  assert.match(listed.stdout, 'https://svc.example.test/events');

  await install(admin, 'subs', 'crm');
  const quiet = await admin.post('/api/workspaces/subs/subscriptions', {
    eventKey: 'crm.deal.lost',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: 'https://crm.example.test/hooks',
  });
  assert.is(quiet.body.meta, null, 'installed: no warning');
});

test('ext show KEY VERSION shows the artifact URL and changelog', async () => {
  const shown = await cli(['ext', 'show', 'crm', '1.0.0']);
  assert.is(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, 'https://artifacts.example.test/crm-1.0.0.jar');
  assert.match(shown.stdout, 'First release: deals and contacts.');
  const missing = await cli(['ext', 'show', 'crm', '9.9.9']);
  assert.is(missing.code, 1);
});

test('ext publish on an existing extension updates a changed name or category, and keeps its file argument', async () => {
  const dir = await tempDir();
  const file = join(dir, 'release.json');
  writeFileSync(file, JSON.stringify({ extensionKey: 'crm', version: '1.2.0', artifactUrl: 'https://artifacts.example.test/crm-1.2.0.jar' }));
  const changed = await cli(['ext', 'publish', file, '--name', 'CRM Pro', '--category', 'sales']);
  assert.is(changed.code, 0, changed.stderr);
  assert.match(changed.stdout, 'updated name, category of crm');
  const detail = (await t.anon.get('/api/marketplace/extensions/crm')).body.data;
  assert.equal([detail.name, detail.category, detail.latestVersion], ['CRM Pro', 'sales', '1.2.0']);

  writeFileSync(file, JSON.stringify({ extensionKey: 'crm', version: '1.3.0', artifactUrl: 'https://artifacts.example.test/crm-1.3.0.jar' }));
  const same = await cli(['ext', 'publish', file, '--name', 'CRM Pro']);
  assert.is(same.code, 0, same.stderr);
  assert.not.match(same.stdout, 'updated', 'nothing changed: no update');

  const swallowed = await cli(['ext', 'publish', '--category', file]);
  assert.is(swallowed.code, 2);
  assert.match(swallowed.stderr, `--category took ${file} as its value`);

  writeFileSync(file, JSON.stringify({ extensionKey: 'crm', version: '1.4.0', artifactUrl: 'https://artifacts.example.test/crm-1.4.0.jar' }));
  const variadic = await cli(['ext', 'publish', '--permission', 'crm.deals.read', file]);
  assert.is(variadic.code, 0, variadic.stderr);
  assert.match(variadic.stdout, 'published crm 1.4.0');
  assert.equal((await t.anon.get('/api/marketplace/extensions/crm')).body.data.permissions, ['crm.deals.read']);

  const missing = await cli(['ext', 'publish', join(dir, 'nope.json')]);
  assert.is(missing.code, 2);
  assert.match(missing.stderr, `publish file ${join(dir, 'nope.json')} does not exist`);
  writeFileSync(file, '{"extensionKey": "crm",');
  const broken = await cli(['ext', 'publish', file]);
  assert.is(broken.code, 2);
  assert.match(broken.stderr, `publish file ${file} is not valid JSON: `);
});

test('ext config unset removes a field (SECRET too); webhook.workspaceId must name an existing workspace', async () => {
  const base = '/api/admin/marketplace/extensions/crm/config';
  await admin.put(base, {
    fields: [
      { name: 'region', type: 'STRING', value: 'eu' },
      { name: 'webhook.secret', type: 'SECRET', value: 's3cret-value' },
    ],
  });
  assert.is((await admin.delete(`${base}/region`)).status, 204);
  assert.is((await admin.delete(`${base}/region`)).status, 404, 'already gone');
  const unset = await cli(['ext', 'config', 'unset', 'crm', 'webhook.secret']);
  assert.is(unset.code, 0, unset.stderr);
  assert.equal((await admin.get(base)).body.data.fields, []);
  assert.equal(t.daemon.services.extensionConfig.values('crm'), {});
  assert.is((await admin.delete('/api/admin/marketplace/extensions/nowhere/config/region')).status, 404);
  assert.is((await t.anon.delete(`${base}/region`)).status, 401);

  const missing = await admin.put(base, { fields: [{ name: 'webhook.workspaceId', type: 'STRING', value: 'no-such-workspace' }] });
  assert.is(missing.status, 400);
  assert.is(missing.body.code, 'VALIDATION_ERROR');
  assert.match(String(missing.body.message), 'webhook.workspaceId');
  assert.match(String(missing.body.message), 'no-such-workspace');
  await createWorkspace(admin, 'hooks');
  assert.is((await admin.put(base, { fields: [{ name: 'webhook.workspaceId', type: 'STRING', value: 'hooks' }] })).status, 200);
});

test('a workspace inbound webhooks publish into is deleted only with force, which removes those webhook.workspaceId settings', async () => {
  await createWorkspace(admin, 'hooked');
  await createWorkspace(admin, 'kept');
  const configOf = (key: string) => `/api/admin/marketplace/extensions/${key}/config`;
  const pointAt = (workspaceId: string) => ({
    fields: [
      { name: 'webhook.scheme', type: 'STRING', value: 'github' },
      { name: 'webhook.workspaceId', type: 'STRING', value: workspaceId },
    ],
  });
  for (const [key, workspaceId] of [['inbound-one', 'hooked'], ['inbound-two', 'hooked'], ['inbound-kept', 'kept']] as const) {
    await publishExtension(admin, key, '1.0.0');
    assert.is((await admin.put(configOf(key), pointAt(workspaceId))).status, 200);
  }
  const settings = async (key: string) =>
    Object.fromEntries(((await admin.get(configOf(key))).body.data.fields as Array<{ name: string; value: unknown }>).map((field) => [field.name, field.value]));

  const refused = await admin.delete('/api/admin/workspaces/hooked');
  assert.is(refused.status, 409);
  assert.is(refused.body.code, 'CONFLICT');
  assert.match(String(refused.body.message), 'inbound-one, inbound-two');
  assert.not.match(String(refused.body.message), 'inbound-kept');
  const refusedByCli = await cli(['workspaces', 'delete', 'hooked', '--yes']);
  assert.is(refusedByCli.code, 1);
  assert.match(refusedByCli.stderr, 'webhook.workspaceId');
  assert.is((await admin.get('/api/workspaces/hooked')).status, 200, 'a refused delete changes nothing');
  assert.is((await settings('inbound-one'))['webhook.workspaceId'], 'hooked');

  const forced = await cli(['workspaces', 'delete', 'hooked', '--force', '--yes']);
  assert.is(forced.code, 0, forced.stderr);
  assert.match(forced.stdout, 'removed webhook.workspaceId of inbound-one');
  assert.match(forced.stdout, 'removed webhook.workspaceId of inbound-two');
  assert.is((await admin.get('/api/workspaces/hooked')).status, 404);
  assert.equal(await settings('inbound-one'), { 'webhook.scheme': 'github' }, 'only the setting naming the workspace goes');
  assert.equal(await settings('inbound-two'), { 'webhook.scheme': 'github' });
  assert.equal(await settings('inbound-kept'), { 'webhook.scheme': 'github', 'webhook.workspaceId': 'kept' });
  assert.is(t.daemon.services.extensionConfig.webhookSettings('inbound-one')?.workspaceId, undefined, 'the webhook endpoint reads the change');

  // A workspace created later under the same id receives nothing meant for the old one.
  await createWorkspace(admin, 'hooked');
  assert.is((await admin.delete('/api/admin/workspaces/hooked')).status, 200);
});

test.run();
