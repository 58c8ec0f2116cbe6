import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace, install, publishExtension } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';

let t: TestDaemon;
let admin: Api;

test.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
  // The newest version needs a newer platform; 1.3.0 is yanked; 1.4.x and 2.0.0-rc.1 run here.
  await publishExtension(admin, 'ledger', '1.2.0');
  await publishExtension(admin, 'ledger', '1.3.0');
  await publishExtension(admin, 'ledger', '1.4.0');
  await publishExtension(admin, 'ledger', '1.4.2');
  await publishExtension(admin, 'ledger', '2.0.0-rc.1');
  await publishExtension(admin, 'ledger', '2.1.0', { requiresPlatform: '99.0.0' });
  assert.is((await admin.delete('/api/admin/marketplace/extensions/ledger/versions/1.3.0')).status, 204);
  await publishExtension(admin, 'future', '3.0.0', { requiresPlatform: '99.0.0' });
  await publishExtension(admin, 'future', '4.0.0', { requiresSdk: '99.0.0' });
});
test.after(async () => {
  await t.destroy();
});

const installIn = (workspace: string, body: Record<string, unknown>) => admin.post(`/api/workspaces/${workspace}/extensions`, body);

test('without a version: the highest non-yanked version this daemon can run, not the latest that it cannot', async () => {
  await createWorkspace(admin, 'plain');
  const result = await installIn('plain', { extensionKey: 'ledger' });
  assert.is(result.status, 201, result.text);
  assert.is(result.body.data.version, '1.4.2');
});

test('nothing this daemon can run: 409 INCOMPATIBLE_VERSION', async () => {
  await createWorkspace(admin, 'nothing');
  for (const version of [undefined, 'latest', '^3']) {
    const result = await installIn('nothing', { extensionKey: 'future', ...(version ? { version } : {}) });
    assert.is(result.status, 409, String(version));
    assert.is(result.body.code, 'INCOMPATIBLE_VERSION', String(version));
  }
  assert.equal((await admin.get('/api/workspaces/nothing/extensions')).body.data, []);
});

test('an existing installation is 409 CONFLICT before any version is resolved', async () => {
  await createWorkspace(admin, 'twice');
  await install(admin, 'twice', 'ledger', '1.2.0');
  for (const version of [undefined, '1.3.0', '2.1.0', '9.9.9', '^7']) {
    const result = await installIn('twice', { extensionKey: 'ledger', ...(version ? { version } : {}) });
    assert.is(result.status, 409, String(version));
    assert.is(result.body.code, 'CONFLICT', String(version));
  }
});

test('latest and semver ranges resolve like an install without a version; exact versions keep their checks', async () => {
  const cases: Array<[string, number, string]> = [
    ['latest', 201, '1.4.2'],
    ['^1.2', 201, '1.4.2'],
    ['~1.3', 409, 'INCOMPATIBLE_VERSION'],
    ['~1.4', 201, '1.4.2'],
    ['1.x', 201, '1.4.2'],
    ['1.2.x', 201, '1.2.0'],
    ['^2', 409, 'INCOMPATIBLE_VERSION'],
    ['1.3.0', 409, 'VERSION_YANKED'],
    ['2.1.0', 409, 'INCOMPATIBLE_VERSION'],
    ['2.0.0-rc.1', 201, '2.0.0-rc.1'],
    ['1.4.0', 201, '1.4.0'],
  ];
  for (const [index, [version, status, expected]] of cases.entries()) {
    const workspace = `range-${index}`;
    await createWorkspace(admin, workspace);
    const result = await installIn(workspace, { extensionKey: 'ledger', version });
    assert.is(result.status, status, `${version}: ${result.text}`);
    assert.is(status === 201 ? result.body.data.version : result.body.code, expected, version);
  }
  await createWorkspace(admin, 'bad-range');
  for (const version of ['newest', '>=>1', 'v1.2.3.4', '']) {
    const result = await installIn('bad-range', { extensionKey: 'ledger', version });
    assert.is(result.status, 400, version);
    assert.is(result.body.meta.issues[0].path, 'version', version);
  }
});

test('PATCH resolves latest and ranges, and refuses a downgrade unless allowDowngrade is true', async () => {
  await createWorkspace(admin, 'moves');
  await install(admin, 'moves', 'ledger', '1.2.0');
  const patch = (body: Record<string, unknown>) => admin.patch('/api/workspaces/moves/extensions/ledger', body);

  const latest = await patch({ version: 'latest' });
  assert.is(latest.status, 200, latest.text);
  assert.is(latest.body.data.version, '1.4.2');

  const down = await patch({ version: '1.2.0' });
  assert.is(down.status, 409);
  assert.is(down.body.code, 'CONFLICT');
  assert.match(down.body.message ?? '', 'allowDowngrade');
  const downRange = await patch({ version: '~1.4.0 <1.4.1' });
  assert.is(downRange.status, 409, 'a range that resolves lower is a downgrade too');
  assert.is((await admin.get('/api/workspaces/moves/extensions')).body.data[0].version, '1.4.2', 'unchanged');

  const allowed = await patch({ version: '1.2.0', allowDowngrade: true });
  assert.is(allowed.status, 200, allowed.text);
  assert.is(allowed.body.data.version, '1.2.0');

  const range = await patch({ version: '~1.4' });
  assert.is(range.body.data.version, '1.4.2');
  assert.is((await patch({ version: '2.1.0' })).body.code, 'INCOMPATIBLE_VERSION');
  assert.is((await patch({ version: '1.3.0', allowDowngrade: true })).body.code, 'VERSION_YANKED');
  assert.is((await patch({ version: '^5' })).body.code, 'INCOMPATIBLE_VERSION');
  assert.is((await patch({ version: 'soon' })).status, 400);
});

test.run();
