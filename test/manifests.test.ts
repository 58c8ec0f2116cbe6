import { Ajv2020 } from 'ajv/dist/2020.js';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { configureExtension, createWorkspace, FAST_DISPATCH } from './helpers/fixtures.js';
import { call, type Api, type HttpResult } from './helpers/http.js';
import { hasValidSignature, subscriberPool } from './helpers/subscriber.js';

/**
 * Manifests, event types, validation on publish, consent and wiring at
 * install, and the compatible-version lookup, through the HTTP API (on both
 * backends: the test run chooses).
 */

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

const DEAL_V1 = {
  type: 'object',
  required: ['dealId', 'amount'],
  properties: { dealId: { type: 'string', minLength: 1 }, amount: { type: 'number', minimum: 0 }, closedAt: { type: 'string', format: 'date-time' } },
};
const DEAL_V2 = { ...DEAL_V1, required: ['dealId', 'amount', 'currency'], properties: { ...DEAL_V1.properties, currency: { type: 'string', pattern: '^[A-Z]{3}$' } } };

const manifestOf = (key: string, version: string, parts: Record<string, any> = {}): Record<string, any> => ({ manifestVersion: 1, extensionKey: key, version, ...parts });

const publishVersion = (key: string, version: string, manifest: unknown) =>
  admin.post(`/api/admin/marketplace/extensions/${key}/versions`, { version, artifactUrl: `https://artifacts.example.test/${key}-${version}.jar`, manifest });

async function created(key: string): Promise<void> {
  assert.is((await admin.post('/api/admin/marketplace/extensions', { extensionKey: key, name: key.toUpperCase() })).status, 201);
}

function assertIssue(result: HttpResult, path: string, message?: RegExp): void {
  assert.is(result.status, 400, result.text);
  assert.is(result.body.code, 'VALIDATION_ERROR');
  const issue = result.body.meta.issues.find((candidate: { path: string }) => candidate.path === path);
  assert.ok(issue, `${path} in ${JSON.stringify(result.body.meta.issues)}`);
  if (message) assert.match(issue.message, message);
}

const versionsOf = async (key: string) => (await t.anon.get(`/api/marketplace/extensions/${key}`)).body.data.versions.map((entry: { version: string }) => entry.version);
const eventsOf = async (workspace: string) => (await admin.get(`/api/workspaces/${workspace}/events`)).body.data;

test('the manifest JSON Schema is served as a document, and the seed catalog’s manifests pass it', async () => {
  const answer = await fetch(`${t.url}/api/schemas/extension-manifest.json`);
  assert.is(answer.status, 200);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/schema\+json/);
  const schema = (await answer.json()) as Record<string, unknown>;
  assert.is(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  const validate = new Ajv2020({ strict: false }).compile(schema);
  const seed = JSON.parse(readFileSync(new URL('../seed/catalog.json', import.meta.url), 'utf8'));
  const manifests = seed.extensions.flatMap((extension: any) => extension.versions.map((version: any) => version.manifest).filter(Boolean));
  assert.ok(manifests.length >= 4, 'the seed shows manifests');
  for (const manifest of manifests) assert.ok(validate(manifest), JSON.stringify(validate.errors));
  const document = (await t.anon.get('/api/openapi.json')).body as any;
  assert.is(document.components.schemas.ExtensionManifest.properties.manifestVersion.const, 1, 'the API document refers to the same schema');
});

test('a manifest that breaks a rule is 400 naming its JSON pointer, and publishes nothing', async () => {
  await created('rules');
  const cases: Array<[unknown, string, RegExp?]> = [
    ['text', 'manifest'],
    [{ extensionKey: 'rules', version: '1.0.0' }, '/manifest/manifestVersion', /required/],
    [manifestOf('rules', '1.0.0', { manifestVersion: 2 }), '/manifest/manifestVersion'],
    [manifestOf('other', '1.0.0'), '/manifest/extensionKey', /must be rules/],
    [manifestOf('rules', '1.0.1'), '/manifest/version', /must be 1\.0\.0/],
    [manifestOf('rules', '1.0.0', { extra: true }), '/manifest/extra', /not allowed/],
    [manifestOf('rules', '1.0.0', { permissions: ['rules.read', 'crm.deals.write'] }), '/manifest/permissions/1', /begin with "rules\."/],
    [manifestOf('rules', '1.0.0', { publishes: [{ eventKey: 'crm.deal.closed', schemaVersion: '1', schema: {} }] }), '/manifest/publishes/0/eventKey'],
    [manifestOf('rules', '1.0.0', { publishes: [{ eventKey: 'rules.done', schemaVersion: '1' }] }), '/manifest/publishes/0/schema', /required/],
    [manifestOf('rules', '1.0.0', { publishes: [{ eventKey: 'rules.done', schemaVersion: '1', schema: { type: 'thing' } }] }), '/manifest/publishes/0/schema', /JSON Schema/],
    [
      manifestOf('rules', '1.0.0', { publishes: [1, 2].map(() => ({ eventKey: 'rules.done', schemaVersion: '1', schema: {} })) }),
      '/manifest/publishes/1/schemaVersion',
      /second time/,
    ],
    [manifestOf('rules', '1.0.0', { subscribes: [{ eventKey: 'crm.deal.closed', kind: 'WEBHOOK' }] }), '/manifest/subscribes/0/kind', /EXTERNAL_SERVICE/],
    [manifestOf('rules', '1.0.0', { subscribes: [{ eventKey: 'crm.deal.closed', kind: 'IN_PROCESS', path: '/x' }] }), '/manifest/subscribes/0/path'],
    [manifestOf('rules', '1.0.0', { subscribes: [{ eventKey: 'crm.deal.closed', kind: 'EXTERNAL_SERVICE', path: 'no-slash' }] }), '/manifest/subscribes/0/path'],
    [manifestOf('rules', '1.0.0', { configuration: [{ name: 'apiKey', type: 'SECRET' }, { name: 'apiKey', type: 'STRING' }] }), '/manifest/configuration/1/name'],
    [manifestOf('rules', '1.0.0', { configuration: [{ name: 'apiKey', type: 'PASSWORD' }] }), '/manifest/configuration/0/type'],
  ];
  for (const [manifest, path, message] of cases) assertIssue(await publishVersion('rules', '1.0.0', manifest), path, message);
  assert.equal(await versionsOf('rules'), [], 'no refused manifest published its version');
});

test('a manifest is immutable with its version: returned in the version record, kept through yank and unyank', async () => {
  await created('keeper');
  const manifest = manifestOf('keeper', '1.0.0', {
    permissions: ['keeper.notes.read'],
    publishes: [{ eventKey: 'keeper.note.saved', schemaVersion: '1', description: 'A note was saved.', schema: { type: 'object' } }],
    subscribes: [{ eventKey: 'platform.notification', kind: 'EXTERNAL_SERVICE', path: '/hooks/notes' }],
    configuration: [{ name: 'apiKey', type: 'SECRET', required: true, description: 'The key.' }],
  });
  const published = await publishVersion('keeper', '1.0.0', manifest);
  assert.is(published.status, 201, published.text);
  assert.equal(published.body.data.manifest, manifest);
  assert.equal((await t.anon.get('/api/marketplace/extensions/keeper/versions/1.0.0')).body.data.manifest, manifest);
  assert.is((await publishVersion('keeper', '1.0.0', manifestOf('keeper', '1.0.0'))).status, 409, 'a published version is never published again');
  assert.is((await admin.delete('/api/admin/marketplace/extensions/keeper/versions/1.0.0?reason=test')).status, 204);
  assert.is((await admin.put('/api/admin/marketplace/extensions/keeper/versions/1.0.0/unyank')).status, 200);
  assert.equal((await t.anon.get('/api/marketplace/extensions/keeper/versions/1.0.0')).body.data.manifest, manifest);
  assert.is((await publishExtensionVersionWithout('keeper', '1.1.0')).body.data.manifest, null, 'a version without a manifest has null');
});

const publishExtensionVersionWithout = (key: string, version: string) =>
  admin.post(`/api/admin/marketplace/extensions/${key}/versions`, { version, artifactUrl: `https://artifacts.example.test/${key}-${version}.jar` });

test('event types: the built-ins and every manifest’s types, each schema version once and never redefined', async () => {
  await created('deals');
  const v1 = manifestOf('deals', '1.0.0', { publishes: [{ eventKey: 'deals.deal.closed', schemaVersion: '1', description: 'Old words.', schema: DEAL_V1 }] });
  assert.is((await publishVersion('deals', '1.0.0', v1)).status, 201);
  const publishes = [
    { eventKey: 'deals.deal.closed', schemaVersion: '10', description: 'A deal was won.', schema: DEAL_V2 },
    // The same schema again, its keys in another order: the same document.
    { eventKey: 'deals.deal.closed', schemaVersion: '1', schema: { properties: DEAL_V1.properties, required: DEAL_V1.required, type: 'object' } },
    { eventKey: 'deals.deal.closed', schemaVersion: '2', schema: DEAL_V2 },
  ];
  const v2 = await publishVersion('deals', '2.0.0', manifestOf('deals', '2.0.0', { publishes }));
  assert.is(v2.status, 201, v2.text);

  const listed = (await t.anon.get('/api/event-types')).body.data;
  assert.equal(
    listed.filter((type: { eventKey: string }) => ['chat.message.received', 'deals.deal.closed', 'platform.notification'].includes(type.eventKey)),
    [
      { eventKey: 'chat.message.received', extensionKey: 'chat', description: listed.find((type: any) => type.eventKey === 'chat.message.received').description, schemaVersions: ['1'] },
      { eventKey: 'deals.deal.closed', extensionKey: 'deals', description: 'A deal was won.', schemaVersions: ['1', '2', '10'] },
      { eventKey: 'platform.notification', extensionKey: 'platform', description: listed.find((type: any) => type.eventKey === 'platform.notification').description, schemaVersions: ['1'] },
    ],
  );
  const one = (await t.anon.get('/api/event-types/deals.deal.closed')).body.data;
  assert.equal(one.schemas, { '1': DEAL_V1, '2': DEAL_V2, '10': DEAL_V2 });
  assert.is((await t.anon.get('/api/event-types/deals.nothing')).status, 404);
  assert.is((await t.anon.get('/api/event-types/nodots')).status, 400);

  const redefined = await publishVersion(
    'deals',
    '3.0.0',
    manifestOf('deals', '3.0.0', { publishes: [{ eventKey: 'deals.deal.closed', schemaVersion: '2', schema: { type: 'object' } }] }),
  );
  assert.is(redefined.status, 409, redefined.text);
  assert.match(redefined.body.message ?? '', /never changes/);
  assert.equal(await versionsOf('deals'), ['2.0.0', '1.0.0'], 'nothing recorded');

  await created('platform');
  const builtIn = await publishVersion(
    'platform',
    '1.0.0',
    manifestOf('platform', '1.0.0', { publishes: [{ eventKey: 'platform.notification', schemaVersion: '1', schema: { type: 'object' } }] }),
  );
  assert.is(builtIn.status, 409, 'a built-in type is not redefined either');
});

test('publishing validates a typed payload (JSON pointers, nothing recorded); the highest schemaVersion by default; untyped keys as before', async () => {
  await createWorkspace(admin, 'typed');
  const publish = (body: Record<string, unknown>) => admin.post('/api/workspaces/typed/events/publish', body);
  const cases: Array<[Record<string, unknown>, string, RegExp?]> = [
    [{ eventKey: 'deals.deal.closed', payload: { dealId: 'D-1', amount: 5 } }, '/payload/currency', /required/],
    [{ eventKey: 'deals.deal.closed', schemaVersion: '1', payload: { amount: 5 } }, '/payload/dealId', /required/],
    [{ eventKey: 'deals.deal.closed', schemaVersion: '1', payload: { dealId: 'D-1', amount: 'five' } }, '/payload/amount', /number/],
    [{ eventKey: 'deals.deal.closed', schemaVersion: '1', payload: { dealId: 'D-1', amount: -1 } }, '/payload/amount', />= 0/],
    [{ eventKey: 'deals.deal.closed', schemaVersion: '1', payload: { dealId: 'D-1', amount: 1, closedAt: 'yesterday' } }, '/payload/closedAt', /date-time/],
    [{ eventKey: 'deals.deal.closed', schemaVersion: '7', payload: { dealId: 'D-1', amount: 1 } }, 'schemaVersion', /1, 2, 10/],
    [{ eventKey: 'platform.notification', payload: { channel: 'general', message: '   ' } }, '/payload/message'],
  ];
  for (const [body, path, message] of cases) assertIssue(await publish(body), path, message);
  assert.equal(await eventsOf('typed'), [], 'no refused event was recorded');

  const latest = await publish({ eventKey: 'deals.deal.closed', payload: { dealId: 'D-1', amount: 5, currency: 'EUR' } });
  assert.is(latest.status, 200, latest.text);
  const older = await publish({ eventKey: 'deals.deal.closed', schemaVersion: '1', payload: { dealId: 'D-2', amount: 5 } });
  assert.is(older.status, 200, older.text);
  const untyped = await publish({ eventKey: 'deals.deal.opened', schemaVersion: 'any', payload: { whatever: true } });
  assert.is(untyped.status, 200, 'a key without a type is published as before');
  const recorded = await eventsOf('typed');
  assert.equal(
    recorded.map((event: { eventKey: string; schemaVersion: string | null }) => [event.eventKey, event.schemaVersion]),
    [['deals.deal.opened', 'any'], ['deals.deal.closed', '1'], ['deals.deal.closed', '10']],
  );
});

test('an event arriving through an inbound webhook is validated like a published one', async () => {
  await createWorkspace(admin, 'hooked');
  await configureExtension(admin, 'deals', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', 'deals-key-123456'],
    ['webhook.header', 'STRING', 'x-api-key'],
    ['webhook.workspaceId', 'STRING', 'hooked'],
    ['webhook.eventKey', 'STRING', 'deals.deal.closed'],
  ]);
  const post = (body: unknown) =>
    call(t.url, 'POST', '/api/webhooks/deals', { raw: JSON.stringify(body), headers: { 'content-type': 'application/json', 'x-api-key': 'deals-key-123456' } });
  assertIssue(await post({ dealId: 'D-9', amount: 3 }), '/payload/currency', /required/);
  assert.equal(await eventsOf('hooked'), []);
  const accepted = await post({ dealId: 'D-9', amount: 3, currency: 'USD' });
  assert.is(accepted.status, 200, accepted.text);
  assert.is((await eventsOf('hooked'))[0].schemaVersion, '10');
});

test('install asks for consent to exactly the manifest’s permissions, wires its subscriptions, and reports missing configuration', async () => {
  const service = await subscribers.start();
  await created('shop');
  const manifest = manifestOf('shop', '1.0.0', {
    permissions: ['shop.orders.read', 'shop.orders.write'],
    subscribes: [
      { eventKey: 'shop.order.paid', kind: 'EXTERNAL_SERVICE', path: '/hooks/orders' },
      { eventKey: 'platform.notification', kind: 'EXTERNAL_SERVICE' },
    ],
    configuration: [
      { name: 'apiKey', type: 'SECRET', required: true },
      { name: 'region', type: 'STRING', required: true },
      { name: 'verbose', type: 'BOOLEAN' },
    ],
  });
  assert.is((await publishVersion('shop', '1.0.0', manifest)).status, 201);
  await createWorkspace(admin, 'store');
  const install = (body: Record<string, unknown>) => admin.post('/api/workspaces/store/extensions', { extensionKey: 'shop', ...body });
  const nothingWritten = async () => {
    assert.equal((await admin.get('/api/workspaces/store/extensions')).body.data, []);
    assert.equal((await admin.get('/api/workspaces/store/subscriptions')).body.data, []);
  };

  for (const grant of [undefined, [], ['shop.orders.read']]) {
    const refused = await install({ serviceBaseUrl: service.url, ...(grant ? { grantPermissions: grant } : {}) });
    assert.is(refused.status, 409, refused.text);
    assert.is(refused.body.code, 'CONSENT_REQUIRED');
    assert.equal(refused.body.meta.permissions, ['shop.orders.read', 'shop.orders.write']);
  }
  assertIssue(await install({ serviceBaseUrl: service.url, grantPermissions: ['shop.orders.read', 'shop.orders.write', 'shop.admin'] }), 'grantPermissions', /does not ask for shop\.admin/);
  assertIssue(await install({ grantPermissions: ['shop.orders.write', 'shop.orders.read'] }), 'serviceBaseUrl', /EXTERNAL_SERVICE/);
  await nothingWritten();

  await configureExtension(admin, 'shop', [['region', 'STRING', 'eu']]);
  const installed = await install({ serviceBaseUrl: `${service.url}/base/`, grantPermissions: ['shop.orders.write', 'shop.orders.read'] });
  assert.is(installed.status, 201, installed.text);
  const answer = installed.body.data;
  assert.equal(answer.grantedPermissions, ['shop.orders.read', 'shop.orders.write']);
  assert.equal(answer.missingConfiguration, ['apiKey']);
  assert.equal(
    answer.subscriptions.map((subscription: any) => [subscription.eventKey, subscription.kind, subscription.deliveryUrl]),
    [
      ['shop.order.paid', 'EXTERNAL_SERVICE', `${service.url}/base/hooks/orders`],
      ['platform.notification', 'EXTERNAL_SERVICE', `${service.url}/base/events`],
    ],
  );
  assert.ok(answer.subscriptions.every((subscription: any) => subscription.signingSecret.startsWith('whsec_')), 'each secret shown once');
  const listed = (await admin.get('/api/workspaces/store/subscriptions')).body.data;
  assert.equal(listed.map((subscription: any) => subscription.id), answer.subscriptions.map((subscription: any) => subscription.id));
  assert.ok(listed.every((subscription: any) => !('signingSecret' in subscription)), 'and never again');

  const paid = await admin.post('/api/workspaces/store/events/publish', { eventKey: 'shop.order.paid', payload: { orderId: 'O-1' } });
  assert.is(paid.status, 200);
  const [delivery] = await service.waitForCount(1);
  assert.is(delivery!.path, '/base/hooks/orders', 'delivered to the path the manifest declared');
  assert.ok(hasValidSignature(delivery!, answer.subscriptions[0].signingSecret));

  await configureExtension(admin, 'shop', [['apiKey', 'SECRET', 'k-1']]);
  assert.equal((await admin.get('/api/workspaces/store/extensions')).body.data[0].missingConfiguration, [], 'set fields are no longer missing');
  assert.equal((await admin.get('/api/workspaces/store/extensions')).body.data[0].grantedPermissions, ['shop.orders.read', 'shop.orders.write']);
});

test('an upgrade asking for a new permission needs consent again, and rewires the subscriptions', async () => {
  const service = await subscribers.start();
  await created('crm2');
  const v1 = manifestOf('crm2', '1.0.0', {
    permissions: ['crm2.read'],
    subscribes: [
      { eventKey: 'crm2.deal.closed', kind: 'EXTERNAL_SERVICE' },
      { eventKey: 'crm2.lead.created', kind: 'EXTERNAL_SERVICE' },
    ],
  });
  const v2 = manifestOf('crm2', '2.0.0', {
    permissions: ['crm2.read', 'crm2.write'],
    subscribes: [
      { eventKey: 'crm2.deal.closed', kind: 'EXTERNAL_SERVICE', path: '/v2/deals' },
      { eventKey: 'crm2.product.created', kind: 'EXTERNAL_SERVICE' },
    ],
  });
  const v21 = manifestOf('crm2', '2.1.0', { permissions: ['crm2.write'], subscribes: v2.subscribes });
  for (const [version, manifest] of [['1.0.0', v1], ['2.0.0', v2], ['2.1.0', v21]] as const) assert.is((await publishVersion('crm2', version, manifest)).status, 201);
  await createWorkspace(admin, 'sales');
  const installed = await admin.post('/api/workspaces/sales/extensions', { extensionKey: 'crm2', version: '1.0.0', serviceBaseUrl: service.url, grantPermissions: ['crm2.read'] });
  assert.is(installed.status, 201, installed.text);
  const handMade = await admin.post('/api/workspaces/sales/subscriptions', { eventKey: 'other.thing', extensionKey: 'crm2', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: service.url });
  assert.is(handMade.status, 201);
  const before = (await admin.get('/api/workspaces/sales/subscriptions')).body.data;

  const refused = await admin.patch('/api/workspaces/sales/extensions/crm2', { version: '2.0.0' });
  assert.is(refused.status, 409, refused.text);
  assert.is(refused.body.code, 'CONSENT_REQUIRED');
  assert.equal(refused.body.meta.permissions, ['crm2.read', 'crm2.write']);
  assert.equal((await admin.get('/api/workspaces/sales/subscriptions')).body.data, before, 'a refused upgrade changes nothing');
  assert.is((await admin.get('/api/workspaces/sales/extensions')).body.data[0].version, '1.0.0');

  const upgraded = await admin.patch('/api/workspaces/sales/extensions/crm2', { version: '2.0.0', grantPermissions: ['crm2.read', 'crm2.write'] });
  assert.is(upgraded.status, 200, upgraded.text);
  assert.equal(upgraded.body.data.grantedPermissions, ['crm2.read', 'crm2.write']);
  assert.equal(upgraded.body.data.subscriptions.map((subscription: any) => [subscription.eventKey, subscription.deliveryUrl]), [['crm2.product.created', `${service.url}/events`]]);
  const after = (await admin.get('/api/workspaces/sales/subscriptions')).body.data;
  const byEvent = Object.fromEntries(after.map((subscription: any) => [subscription.eventKey, subscription]));
  assert.equal(Object.keys(byEvent).sort(), ['crm2.deal.closed', 'crm2.product.created', 'other.thing'], 'the dropped one removed, the hand-made one kept');
  const deals = before.find((subscription: any) => subscription.eventKey === 'crm2.deal.closed');
  assert.is(byEvent['crm2.deal.closed'].id, deals.id, 'a kept subscription keeps its id and secret');
  assert.is(byEvent['crm2.deal.closed'].deliveryUrl, `${service.url}/v2/deals`, 'and moves to the new path');

  const narrower = await admin.patch('/api/workspaces/sales/extensions/crm2', { version: '2.1.0' });
  assert.is(narrower.status, 200, 'a version asking nothing new needs no consent');
  assert.equal(narrower.body.data.grantedPermissions, ['crm2.write']);
});

test('compatible version: the highest non-yanked version the given platform and SDK versions run, or null', async () => {
  await created('compat');
  for (const [version, requires] of [
    ['1.0.0', {}],
    ['1.5.0', { requiresPlatform: '2.0.0' }],
    ['2.0.0', { requiresPlatform: '3.0.0', requiresSdk: '2.0.0' }],
    ['2.1.0-beta.1', { requiresPlatform: '3.0.0' }],
  ] as const) {
    assert.is((await admin.post('/api/admin/marketplace/extensions/compat/versions', { version, artifactUrl: 'https://artifacts.example.test/c.jar', ...requires })).status, 201);
  }
  const compatible = async (query: string) => (await t.anon.get(`/api/marketplace/extensions/compat${query}`)).body.data.compatibleVersion;
  assert.is(await compatible('?platformVersion=3.1.0&sdkVersion=2.0.0'), '2.0.0');
  assert.is(await compatible('?platformVersion=3.1.0&sdkVersion=1.0.0'), '1.5.0', 'a stable version before a higher prerelease');
  assert.is(await compatible('?platformVersion=2.5.0'), '1.5.0');
  assert.is(await compatible('?platformVersion=1.0.0'), '1.0.0');
  assert.is(await compatible('?sdkVersion=1.0.0'), '1.5.0', 'a requirement on what is not given is not checked');
  assert.is((await admin.delete('/api/admin/marketplace/extensions/compat/versions/1.0.0')).status, 204);
  assert.is(await compatible('?platformVersion=1.0.0'), null);
  for (const version of ['1.5.0', '2.0.0']) assert.is((await admin.delete(`/api/admin/marketplace/extensions/compat/versions/${version}`)).status, 204);
  assert.is(await compatible('?platformVersion=3.1.0'), '2.1.0-beta.1', 'a prerelease when no stable version fits');
  assert.not.ok('compatibleVersion' in (await t.anon.get('/api/marketplace/extensions/compat')).body.data, 'only when asked');
  assertIssue(await t.anon.get('/api/marketplace/extensions/compat?platformVersion=latest'), 'platformVersion');
});

test.run();
