import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { configureExtension, createWorkspace, FAST_DISPATCH } from './helpers/fixtures.js';
import { api, call, type Api } from './helpers/http.js';
import { onDatabaseOf, TEST_BACKEND } from './helpers/postgres.js';
import { endpoints } from '../src/contract/endpoints.js';
import { subscriberPool } from './helpers/subscriber.js';

/**
 * Personal API tokens and installation tokens, through the HTTP API, on the
 * backend of the run.
 */

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

let t: TestDaemon;
let admin: Api & { token: string };
const subscribers = subscriberPool();

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await createWorkspace(admin, 'acme');
  await createWorkspace(admin, 'other');
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

async function tokenFor(client: Api, body: Record<string, unknown>): Promise<{ id: string; token: string; client: Api }> {
  const created = await client.post('/api/auth/tokens', { name: 'script', ...body });
  assert.is(created.status, 201, created.text);
  return { id: created.body.data.id, token: created.body.data.token, client: api(t.url, created.body.data.token) };
}

function assertForbidden(result: { status: number; text: string; body: any }, requiredScope?: string): void {
  assert.is(result.status, 403, result.text);
  assert.is(result.body.code, 'FORBIDDEN');
  if (requiredScope) assert.is(result.body.meta.requiredScope, requiredScope);
}

test('a token is plt_ and 43 base64url characters, shown once, listed with lastUsedAt, and acts as its user', async () => {
  const created = await admin.post('/api/auth/tokens', { name: 'deploy', scopes: ['events:publish', 'events:read'], expiresInDays: 30 });
  assert.is(created.status, 201, created.text);
  const data = created.body.data;
  assert.match(data.token, /^plt_[A-Za-z0-9_-]{43}$/);
  assert.equal(Object.keys(data).sort(), ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'scopes', 'token', 'userId', 'workspaces']);
  assert.equal([data.scopes, data.workspaces, data.lastUsedAt], [['events:publish', 'events:read'], null, null]);
  assert.is(Date.parse(data.expiresAt) - Date.parse(data.createdAt), 30 * 86_400_000);

  const script = api(t.url, data.token);
  assert.is((await script.get('/api/auth/me')).body.data.email, 'admin@example.test', 'any token reads its own account');
  assert.is((await script.post('/api/workspaces/acme/events/publish', { eventKey: 'deploy.done', payload: {} })).status, 200);
  const [event] = (await script.get('/api/workspaces/acme/events')).body.data;
  assert.is(event.publishedBy, (await admin.get('/api/auth/me')).body.data.id, 'published as its user');

  const listed = (await admin.get('/api/auth/tokens')).body.data.find((token: { id: string }) => token.id === data.id);
  assert.not.ok('token' in listed, 'never shown again');
  assert.match(listed.lastUsedAt, /:00\.000Z$/, 'last use, to the minute');
  assert.not.ok(t.logs.join('').includes(data.token), 'never in the log');
});

test('each scope allows what it names and refuses the rest with meta.requiredScope; some routes are for sessions only', async () => {
  const { client: publisher } = await tokenFor(admin, { scopes: ['events:publish'] });
  assertForbidden(await publisher.get('/api/workspaces/acme/events'), 'events:read');
  assertForbidden(await publisher.post('/api/admin/workspaces', { id: 'nope', name: 'Nope' }), 'workspaces:write');
  assertForbidden(await publisher.get('/api/admin/users'), 'users:write');
  assertForbidden(await publisher.post('/api/auth/tokens', { name: 'more', scopes: ['users:write'] }), 'tokens:write');
  assertForbidden(await publisher.get('/api/workspaces/acme/deliveries'), 'deliveries:read');
  assertForbidden(await publisher.post('/api/admin/dead-letters/discard', {}), 'dead-letters:write');
  assertForbidden(await publisher.post('/api/admin/marketplace/extensions', { extensionKey: 'nope', name: 'N' }), 'catalog:write');
  assert.is((await publisher.get('/api/marketplace/extensions')).status, 200, 'public reads need no scope');

  const { client: everything } = await tokenFor(admin, {
    scopes: ['catalog:write', 'events:publish', 'events:read', 'deliveries:read', 'dead-letters:write', 'workspaces:write', 'users:write', 'tokens:write'],
  });
  assert.is((await everything.get('/api/workspaces/acme/events')).status, 200);
  assert.is((await everything.get('/api/workspaces/acme/deliveries')).status, 200);
  assert.is((await everything.get('/api/admin/users')).status, 200);
  assert.is((await everything.post('/api/admin/workspaces', { id: 'made-by-token', name: 'T' })).status, 201);
  assert.is((await everything.post('/api/admin/marketplace/extensions', { extensionKey: 'by-token', name: 'T' })).status, 201);
  assert.is((await everything.post('/api/admin/dead-letters/discard', { workspaceId: 'acme' })).status, 200);
  for (const [method, path] of [
    ['POST', '/api/auth/logout'],
    ['PUT', '/api/auth/me/password'],
    ['GET', '/api/admin/backup'],
  ] as const) {
    const refused = await everything.send(method, path, method === 'PUT' ? { json: { currentPassword: 'x', newPassword: 'another-password-1' } } : {});
    assertForbidden(refused);
    assert.match(refused.body.message ?? '', 'log in');
  }

  const user = await createUser(t, 'token-user@example.test');
  const { client: userScript } = await tokenFor(user, { scopes: ['users:write'] });
  assertForbidden(await userScript.get('/api/admin/users'));
  assert.is((await userScript.get('/api/admin/users')).body.message, 'this action requires the ADMIN role', 'a token is no more than its user');
});

test('every route with a scope: a token with only that scope passes the gate, a token with every other scope is refused naming it', async () => {
  const all = ['catalog:write', 'events:publish', 'events:read', 'deliveries:read', 'dead-letters:write', 'workspaces:write', 'users:write', 'tokens:write'];
  const tokenOf = async (scopes: string[]) => (await admin.post('/api/auth/tokens', { name: 'gate', scopes })).body.data.token as string;
  const only = new Map<string, string>();
  const others = new Map<string, string>();
  for (const scope of all) {
    only.set(scope, await tokenOf([scope]));
    others.set(scope, await tokenOf(all.filter((other) => other !== scope)));
  }
  // A path whose parameters pass validation (and mostly name nothing): the gate comes before any of that.
  const pathOf = (path: string) =>
    path.replace(/:(\w+)/g, (_, name: string) =>
      ({ id: 'nowhere', key: 'nowhere', version: '9.9.9', userId: UNKNOWN_ID, subscriptionId: UNKNOWN_ID, eventId: UNKNOWN_ID, tokenId: UNKNOWN_ID, channel: 'x', extensionKey: 'nowhere', field: 'colour' })[name] ?? UNKNOWN_ID,
    );
  const ask = async (method: string, path: string, token: string) => {
    const abort = new AbortController();
    const answer = await fetch(`${t.url}${pathOf(path)}`, { method, headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
    const text = answer.headers.get('content-type')?.startsWith('application/json') ? await answer.text() : '';
    abort.abort(); // a live stream, or a backup, that the gate let through
    return { status: answer.status, body: text ? JSON.parse(text) : null };
  };
  let checked = 0;
  for (const [operationId, declaration] of Object.entries(endpoints)) {
    const scope = (declaration as { scope?: string }).scope;
    if (scope === undefined || scope === 'any' || declaration.access === 'public' || declaration.access === 'scraper') continue;
    const refused = await ask(declaration.method, declaration.path, others.get(scope)!);
    assert.is(refused.status, 403, `${operationId} without ${scope}`);
    assert.is(refused.body?.meta?.requiredScope, scope, `${operationId} names ${scope}`);
    const passed = await ask(declaration.method, declaration.path, only.get(scope)!);
    assert.not.ok(passed.status === 403 && passed.body?.meta?.requiredScope, `${operationId} with ${scope}: ${passed.status} ${JSON.stringify(passed.body)}`);
    assert.not.ok(passed.status === 401, `${operationId} with ${scope}: 401`);
    checked += 1;
  }
  assert.ok(checked > 40, `${checked} routes checked`);
  // /metrics answers a scraper 200 or 401, never 403.
  assert.is((await ask('GET', '/metrics', only.get('deliveries:read')!)).status, 200);
  assert.is((await ask('GET', '/metrics', others.get('deliveries:read')!)).status, 401);
});

test('a token limited to workspaces calls the routes of those workspaces only', async () => {
  const { client } = await tokenFor(admin, { scopes: ['events:publish', 'events:read'], workspaces: ['acme'] });
  assert.is((await client.post('/api/workspaces/acme/events/publish', { eventKey: 'limited.one', payload: {} })).status, 200);
  assertForbidden(await client.post('/api/workspaces/other/events/publish', { eventKey: 'limited.one', payload: {} }));
  assertForbidden(await client.get('/api/workspaces'));
  assert.is((await client.get('/api/auth/me')).status, 200);
});

test('bad requests to create a token are 400; at most 100 per user', async () => {
  for (const body of [
    { name: 'x', scopes: [] },
    { name: 'x', scopes: ['events:delete'] },
    { name: 'x', scopes: ['events:read'], expiresInDays: 0 },
    { name: 'x', scopes: ['events:read'], expiresInDays: 366 },
    { name: 'x', scopes: ['events:read'], workspaces: [] },
    { name: '', scopes: ['events:read'] },
  ]) {
    assert.is((await admin.post('/api/auth/tokens', body)).status, 400, JSON.stringify(body));
  }
  const user = await createUser(t, 'many-tokens@example.test');
  const made = await Promise.all(Array.from({ length: 105 }, () => user.post('/api/auth/tokens', { name: 'n', scopes: ['events:read'] })));
  assert.is(made.filter((result) => result.status === 201).length, 100, 'made at once, still 100');
  assert.is(made.filter((result) => result.status === 409).length, 5);
});

test('revoked, expired, a disabled or deleted user: refused at the next request', async () => {
  const user = await createUser(t, 'revoker@example.test');
  const first = await tokenFor(user, { scopes: ['events:read'] });
  assert.is((await first.client.get('/api/auth/me')).status, 200);
  assert.is((await user.delete(`/api/auth/tokens/${first.id}`)).status, 204);
  assert.is((await first.client.get('/api/auth/me')).status, 401);
  assert.is((await user.delete(`/api/auth/tokens/${first.id}`)).status, 404);

  const second = await tokenFor(user, { scopes: ['events:read'] });
  assert.is((await admin.delete(`/api/auth/tokens/${second.id}`)).status, 404, 'the user route revokes one’s own only');
  assert.ok((await admin.get('/api/admin/tokens')).body.data.some((token: { id: string; userId: string }) => token.id === second.id && token.userId === user.id));
  assert.is((await admin.delete(`/api/admin/tokens/${second.id}`)).status, 204);
  assert.is((await second.client.get('/api/auth/me')).status, 401);

  const third = await tokenFor(user, { scopes: ['events:read'] });
  assert.is((await admin.patch(`/api/admin/users/${user.id}`, { active: false })).status, 200);
  assert.is((await third.client.get('/api/auth/me')).status, 401, 'disabling the user ends its tokens');
  assert.is((await admin.patch(`/api/admin/users/${user.id}`, { active: true })).status, 200);
  assert.is((await third.client.get('/api/auth/me')).status, 401, 'for good, as its sessions');
  const fourth = await tokenFor(await t.as('revoker@example.test', user.password), { scopes: ['events:read'] });
  assert.is((await fourth.client.get('/api/auth/me')).status, 200);
  assert.is((await admin.delete(`/api/admin/users/${user.id}`)).status, 204);
  assert.is((await fourth.client.get('/api/auth/me')).status, 401);
  assert.not.ok((await admin.get('/api/admin/tokens')).body.data.some((token: { userId: string }) => token.userId === user.id), 'its tokens went with it');

  const expiring = await tokenFor(admin, { scopes: ['events:read'] });
  assert.is((await expiring.client.get('/api/auth/me')).status, 200);
  await expireToken(expiring.id);
  assert.is((await api(t.url, expiring.token).get('/api/auth/me')).status, 401);
});

/** Moves a token's expiry into the past where it is stored: a day is the shortest a token is made for. */
async function expireToken(id: string): Promise<void> {
  const past = new Date(Date.now() - 1000).toISOString();
  if (TEST_BACKEND === 'postgres') {
    await onDatabaseOf(t.dataDir, (client) => client.query('UPDATE platform.api_tokens SET expires_at = $2 WHERE id = $1', [id, past]));
    return;
  }
  // Files: the daemon holds the file in memory; it is edited while the daemon is stopped.
  const file = join(t.dataDir, 'api-tokens.json');
  await t.stop();
  const document = JSON.parse(readFileSync(file, 'utf8'));
  document.tokens = document.tokens.map((token: { id: string }) => (token.id === id ? { ...token, expiresAt: past } : token));
  writeFileSync(file, JSON.stringify(document));
  t = await startTestDaemon({ dispatch: FAST_DISPATCH }, t.dataDir);
  admin = await t.admin();
}

/** Where tokens are kept: the API tokens, or the installations (which hold their extension's token). */
async function storedText(what: 'api-tokens' | 'installations'): Promise<string> {
  if (TEST_BACKEND === 'postgres') {
    const table = what === 'api-tokens' ? 'api_tokens' : 'installations';
    return JSON.stringify((await onDatabaseOf(t.dataDir, (client) => client.query(`SELECT * FROM platform.${table}`))).rows);
  }
  return readFileSync(join(t.dataDir, what === 'api-tokens' ? 'api-tokens.json' : 'workspaces.json'), 'utf8');
}

test('stored only as a hash', async () => {
  const { token } = await tokenFor(admin, { scopes: ['events:read'] });
  const stored = await storedText('api-tokens');
  assert.ok(stored.length > 0);
  assert.not.ok(stored.includes(token.slice(4)), 'the secret is nowhere in storage');
});

test('any Authorization header is a 401 or an answer, never a 5xx', async () => {
  const shapes = [
    '',
    'plt_',
    'plt_x',
    `plt_${'A'.repeat(43)}`,
    `plt_${'A'.repeat(42)}=`,
    `plt_${'A'.repeat(44)}`,
    `plt_${'é'.repeat(43)}`,
    `pli_${'A'.repeat(43)}`,
    `PLT_${'A'.repeat(43)}`,
    'plt_%00%00',
    `plt_${'A'.repeat(100_000)}`,
    'eyJhbGciOiJIUzI1NiJ9.e30.x',
    'Basic dXNlcjpwYXNz',
  ];
  for (const shape of shapes) {
    const result = await call(t.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${shape}` } }).catch(() => null);
    if (result === null) continue; // a header too large for Node's parser: the connection is refused, no daemon code runs
    assert.ok([400, 401, 403, 431].includes(result.status), `${shape.slice(0, 20)}: ${result.status}`);
  }
});

test('an installation token: publishes its manifest’s events into its workspace, reads its installation and own deliveries, nothing else', async () => {
  const service = await subscribers.start();
  assert.is((await admin.post('/api/admin/marketplace/extensions', { extensionKey: 'crm', name: 'CRM' })).status, 201);
  const manifest = (version: string, publishes: string[]) => ({
    manifestVersion: 1,
    extensionKey: 'crm',
    version,
    publishes: publishes.map((eventKey) => ({ eventKey, schemaVersion: '1', schema: { type: 'object' } })),
    subscribes: [{ eventKey: 'platform.notification', kind: 'EXTERNAL_SERVICE' }],
    configuration: [{ name: 'apiKey', type: 'SECRET', required: true }],
  });
  for (const [version, publishes] of [['1.0.0', ['crm.deal.closed']], ['2.0.0', []]] as const) {
    const published = await admin.post('/api/admin/marketplace/extensions/crm/versions', {
      version,
      artifactUrl: 'https://artifacts.example.test/crm.jar',
      manifest: manifest(version, [...publishes]),
    });
    assert.is(published.status, 201, published.text);
  }
  await configureExtension(admin, 'crm', [['apiKey', 'SECRET', 'the-crm-key']]);
  const installed = await admin.post('/api/workspaces/acme/extensions', { extensionKey: 'crm', version: '1.0.0', serviceBaseUrl: service.url });
  assert.is(installed.status, 201, installed.text);
  const { installationToken } = installed.body.data;
  assert.match(installationToken, /^pli_[A-Za-z0-9_-]{43}$/);
  assert.not.ok(JSON.stringify((await admin.get('/api/workspaces/acme/extensions')).body).includes(installationToken), 'shown once');
  const extension = api(t.url, installationToken);
  const storedInstallations = await storedText('installations');
  assert.match(storedInstallations, 'crm');
  assert.not.ok(storedInstallations.includes(installationToken.slice(4)), 'an installation token is kept as a hash only');

  const published = await extension.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed', payload: { dealId: 'D-1' } });
  assert.is(published.status, 200, published.text);
  const event = (await admin.get(`/api/workspaces/acme/events/${published.body.meta.eventId}`)).body.data;
  assert.equal([event.publishedBy, event.actor], ['extension:crm', 'crm']);
  assertForbidden(await extension.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.other', payload: {} }));
  assertForbidden(await extension.post('/api/workspaces/other/events/publish', { eventKey: 'crm.deal.closed', payload: {} }));

  const own = await extension.get('/api/extension/installation');
  assert.equal(own.body.data, { workspaceId: 'acme', extensionKey: 'crm', version: '1.0.0', grantedPermissions: [], configuration: { apiKey: 'the-crm-key' } });
  assert.is((await admin.get('/api/extension/installation')).status, 401, 'for installation tokens only');

  const subscriptionId = installed.body.data.subscriptions[0].id;
  assert.is((await extension.get(`/api/workspaces/acme/deliveries?subscriptionId=${subscriptionId}`)).status, 200);
  assertForbidden(await extension.get('/api/workspaces/acme/deliveries'));
  for (const [method, path] of [
    ['GET', '/api/workspaces/acme/events'],
    ['GET', '/api/workspaces/acme'],
    ['GET', '/api/auth/me'],
    ['GET', '/api/admin/dead-letters'],
    ['POST', '/api/admin/workspaces'],
  ] as const) {
    assertForbidden(await extension.send(method, path));
  }

  const rotated = await admin.post('/api/workspaces/acme/extensions/crm/rotate-token');
  assert.is(rotated.status, 200, rotated.text);
  assert.is((await extension.get('/api/extension/installation')).status, 401, 'the old token ends at once');
  const renewed = api(t.url, rotated.body.data.installationToken);
  assert.is((await renewed.get('/api/extension/installation')).status, 200);

  assert.is((await admin.patch('/api/workspaces/acme/extensions/crm', { enabled: false })).status, 200);
  assert.is((await renewed.get('/api/extension/installation')).status, 401, 'disabling ends it');
  assert.is((await admin.post('/api/workspaces/acme/extensions/crm/rotate-token')).status, 409, 'a disabled extension gets none');
  assert.is((await admin.patch('/api/workspaces/acme/extensions/crm', { enabled: true })).status, 200);
  assert.is((await renewed.get('/api/extension/installation')).status, 401, 'and enabling does not revive it');
  const again = api(t.url, (await admin.post('/api/workspaces/acme/extensions/crm/rotate-token')).body.data.installationToken);
  assert.is((await again.get('/api/extension/installation')).status, 200);

  const upgraded = await admin.patch('/api/workspaces/acme/extensions/crm', { version: '2.0.0' });
  assert.is(upgraded.status, 200, upgraded.text);
  assert.is((await again.get('/api/extension/installation')).status, 401, 'a version that publishes nothing has no token');
  assert.is((await admin.post('/api/workspaces/acme/extensions/crm/rotate-token')).status, 409);
  const back = await admin.patch('/api/workspaces/acme/extensions/crm', { version: '1.0.0', allowDowngrade: true });
  const restored = api(t.url, back.body.data.installationToken);
  assert.is((await restored.get('/api/extension/installation')).status, 200, 'moving to a version that publishes issues one');
  assert.is((await admin.delete('/api/workspaces/acme/extensions/crm')).status, 204);
  assert.is((await restored.get('/api/extension/installation')).status, 401, 'uninstalling ends it');
  assert.not.ok(t.logs.join('').includes(installationToken.slice(4)), 'never in the log');
});

test.run();
