import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createHmac } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createApiClient, type HttpRequest } from '../src/contract/client.js';
import { endpoints } from '../src/contract/endpoints.js';
import { buildRoutes } from '../src/daemon/http/index.js';
import { runCli } from './helpers/cli.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH } from './helpers/fixtures.js';
import { call, type HttpResult } from './helpers/http.js';
import { openStream } from './helpers/streams.js';
import { startSubscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';
import { tempDir } from './helpers/temp.js';

interface Operation {
  parameters: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<string, { content?: Record<string, { schema: { properties?: { code?: { enum?: string[] } } } }> }>;
  security?: unknown[];
  operationId?: string;
}
type OpenApi = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, object> } };

let t: TestDaemon;
let document: OpenApi;

test.before(async () => {
  // No retries: a failed delivery is a dead letter at once, so that the answers below can show one.
  t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [] } });
  const answer = await t.anon.get('/api/openapi.json');
  assert.is(answer.status, 200, answer.text);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
  document = JSON.parse(answer.text) as OpenApi;
});
test.after(async () => {
  await t.destroy();
});

const operations = () =>
  Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method, path, operation })),
  );

test('the document has exactly the routes the router serves, each with its path parameters', () => {
  const served = buildRoutes(t.daemon.services, t.daemon.config)
    .list()
    .map((route) => route.replace(/:(\w+)/g, '{$1}'))
    .sort();
  const documented = operations()
    .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
    .sort();
  assert.equal(documented, served);
  assert.ok(served.includes('GET /api/openapi.json'));
  const declared = Object.values(endpoints).map(({ method, path }) => `${method} ${path.replace(/:(\w+)/g, '{$1}')}`).sort();
  assert.equal(declared, served, 'the router serves exactly the endpoint table');
  for (const { method, path, operation } of operations()) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
    const declared = operation.parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
    assert.equal(declared.sort(), names.sort(), `${method} ${path}`);
  }
});

test('building the routes adds no listener to the services: live streams and readiness are built once, with them', () => {
  const { auth, workspaces } = t.daemon.services;
  let added = 0;
  /** Counts what is added, and still adds it; answers how to stop counting. */
  const counting = <L>(service: { onAccessChanged(listener: L): void }) => {
    const original = service.onAccessChanged;
    service.onAccessChanged = (listener: L) => {
      added += 1;
      original.call(service, listener);
    };
    return () => {
      service.onAccessChanged = original;
    };
  };
  const restores = [counting(auth), counting(workspaces)];
  try {
    buildRoutes(t.daemon.services, t.daemon.config);
  } finally {
    for (const restore of restores) restore();
  }
  assert.is(added, 0);
});

test('the typed client builds each path from the table, each segment encoded, and the query from what is given', () => {
  const client = createApiClient(endpoints, async () => ({ status: 204, headers: new Headers(), body: undefined }));
  assert.is(client.urlOf('uninstallExtension', { params: { id: 'a b', key: 'c/d' } }), '/api/workspaces/a%20b/extensions/c%2Fd');
  assert.is(client.urlOf('listExtensions', { query: { limit: 10, search: 'x&y', category: undefined } }), '/api/marketplace/extensions?limit=10&search=x%26y');
  assert.is(client.urlOf('listUsers'), '/api/admin/users');
});

test('the typed client sends the request headers an operation declares, those given', async () => {
  const sent: HttpRequest[] = [];
  const client = createApiClient(endpoints, async (request) => {
    sent.push(request);
    return { status: 200, headers: new Headers(), body: { code: 'SUCCESS', message: null, data: null, meta: { eventId: 'e-1' } } };
  });
  await client.call('publishEvent', { params: { id: 'acme' }, headers: { 'Idempotency-Key': 'k-1' }, body: { eventKey: 'a.b' } });
  await client.call('publishEvent', { params: { id: 'acme' }, headers: { 'Idempotency-Key': undefined }, body: { eventKey: 'a.b' } });
  await client.call('publishEvent', { params: { id: 'acme' }, body: { eventKey: 'a.b' } });
  assert.equal(sent[0]!.headers, { 'Idempotency-Key': 'k-1' });
  assert.is(sent[1]!.headers, undefined);
  assert.is(sent[2]!.headers, undefined);
});

test('parameters, bodies, error codes, security and headers come from the endpoint table', () => {
  const login = document.paths['/api/auth/login']!.post!;
  const loginBody = login.requestBody!.content['application/json']!.schema;
  assert.ok(loginBody.properties?.email && loginBody.properties.password, JSON.stringify(loginBody));
  assert.equal(login.security, []);
  assert.ok(login.responses['429'], 'a login can be throttled');
  assert.equal(login.responses['403']!.content!['application/json']!.schema.properties!.code!.enum, ['ACCOUNT_DISABLED', 'FORBIDDEN']);
  assert.ok((login.responses['200'] as { headers?: Record<string, unknown> }).headers?.['Set-Cookie'], 'the session cookie is a documented header');
  assert.is(login.operationId, 'createSession');

  const browse = document.paths['/api/marketplace/extensions']!.get!;
  const limit = browse.parameters.find((parameter) => parameter.in === 'query' && parameter.name === 'limit') as unknown as { schema: object };
  assert.equal(limit.schema, { type: 'integer', minimum: 1, maximum: 500, default: 50 });

  const users = document.paths['/api/admin/users']!.get!;
  assert.equal(users.responses['401']!.content!['application/json']!.schema.properties!.code!.enum, ['UNAUTHORIZED']);
  assert.equal(users.responses['403']!.content!['application/json']!.schema.properties!.code!.enum, ['ACCOUNT_DISABLED', 'FORBIDDEN']);
  assert.equal(users.security, [{ cookie: [] }, { bearer: [] }, { apiToken: ['users:write'] }], 'an API token needs the scope the route names');
  assert.is((users as unknown as Record<string, unknown>)['x-required-scope'], 'users:write');
  assert.equal(document.paths['/api/auth/logout']!.post!.security, [{ cookie: [] }, { bearer: [] }], 'a route for sessions only');
  assert.equal(document.paths['/api/workspaces/{id}/events/publish']!.post!.security, [
    { cookie: [] },
    { bearer: [] },
    { apiToken: ['events:publish'] },
    { installationToken: [] },
  ]);
  assert.equal(document.paths['/api/extension/installation']!.get!.security, [{ installationToken: [] }]);
  assert.equal(document.paths['/metrics']!.get!.security, [{ metricsToken: [] }, { cookie: [] }, { bearer: [] }, { apiToken: ['deliveries:read'] }]);
  assert.ok(document.paths['/metrics']!.get!.responses['401'], 'metrics refuse a caller without the token');

  const workspace = document.paths['/api/workspaces/{id}']!.get!;
  assert.ok(workspace.responses['404'], 'a path with an id can name nothing');
  const yank = document.paths['/api/admin/marketplace/extensions/{key}/versions/{version}']!.delete! as unknown as { operationId: string; summary: string };
  assert.is(yank.operationId, 'yankVersion');
  assert.ok(yank.summary.length > 0);
  const publish = document.paths['/api/workspaces/{id}/events/publish']!.post!;
  const key = publish.parameters.find((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key') as
    | { required: boolean; description?: string; schema: { type: string; minLength: number; maxLength: number } }
    | undefined;
  assert.ok(key, 'publishing documents its Idempotency-Key header');
  assert.is(key.required, false);
  assert.equal([key.schema.type, key.schema.minLength, key.schema.maxLength], ['string', 1, 255]);
  assert.match(key.description ?? '', 'IDEMPOTENCY_KEY_REUSED');
  assert.equal(publish.responses['409']!.content!['application/json']!.schema.properties!.code!.enum, ['CONFLICT', 'IDEMPOTENCY_KEY_REUSED']);
  assert.equal(document.components.schemas.PublishedMeta, {
    type: 'object',
    properties: { eventId: { type: 'string' }, idempotentReplay: { const: true } },
    required: ['eventId'],
    additionalProperties: false,
  });
  const stream = document.paths['/api/workspaces/{id}/stream']!.get!;
  assert.ok(stream.parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'Last-Event-ID'));
  assert.ok(document.paths['/api/admin/backup']!.get!.responses['200']!.content!['application/gzip']);
  assert.ok(document.paths['/api/webhooks/{extensionKey}']!.post!.requestBody!.content['*/*']);
});

test('every operation has an operationId of a verb and a noun (at most 40 characters), a summary and one tag the document declares', () => {
  const tags = new Set((document as unknown as { tags: { name: string }[] }).tags.map((tag) => tag.name));
  const verbs = /^(get|list|create|update|delete|add|remove|publish|yank|unyank|rename|install|uninstall|rotate|test|stream|replay|redeliver|discard|receive|download|change|reset|end|revoke)[A-Z]/;
  const ids = new Set<string>();
  for (const { method, path, operation } of operations()) {
    const { operationId, summary, tags: own } = operation as Operation & { summary?: string; tags?: string[] };
    const where = `${method} ${path}: ${operationId}`;
    assert.ok(operationId && verbs.test(operationId) && /^[a-z][A-Za-z]*$/.test(operationId) && operationId.length <= 40, where);
    assert.not.ok(ids.has(operationId!), `${where} twice`);
    ids.add(operationId!);
    assert.ok(summary && summary.length > 0, where);
    assert.ok(own?.length === 1 && tags.has(own[0]!), where);
  }
});

test('every operation lists the errors its inputs and access imply', () => {
  for (const { method, path, operation } of operations()) {
    const codes = (status: string) => operation.responses[status]?.content?.['application/json']?.schema.properties?.code?.enum ?? [];
    const where = `${method} ${path}`;
    if (operation.parameters.some((parameter) => parameter.in !== 'header') || operation.requestBody) assert.ok(codes('400').includes('VALIDATION_ERROR'), where);
    if (operation.requestBody?.content['application/json']) assert.equal(codes('413'), ['PAYLOAD_TOO_LARGE'], where);
    if ((operation.security ?? []).length > 0) assert.ok(codes('401').includes('UNAUTHORIZED'), where);
    assert.equal(codes('503'), ['UNAVAILABLE'], where);
  }
});

test('the document is valid OpenAPI 3.1', async () => {
  assert.is(document.openapi, '3.1.0');
  const result = await new Validator().validate(document as never);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
});

test('`platform openapi` prints the same document, or writes it with --out', async () => {
  const env = { PLATFORM_URL: t.url, XDG_CONFIG_HOME: await tempDir() };
  const printed = await runCli(['openapi'], { env });
  assert.is(printed.code, 0, printed.stderr);
  assert.equal(JSON.parse(printed.stdout), document);

  const out = join(await tempDir(), 'openapi.json');
  const written = await runCli(['openapi', '--out', out], { env });
  assert.is(written.code, 0, written.stderr);
  assert.is(written.stdout, '');
  assert.equal(JSON.parse(await readFile(out, 'utf8')), document);
});

test('the contract imports nothing but valibot and itself (the console bundles it for the browser)', async () => {
  const dir = join(import.meta.dirname, '..', 'src', 'contract');
  for (const file of await readdir(dir)) {
    const source = await readFile(join(dir, file), 'utf8');
    const imported = [...source.matchAll(/\bfrom '([^']+)'/g)].map((match) => match[1]!);
    assert.equal(imported.filter((name) => name !== 'valibot' && !name.startsWith('./')), [], file);
  }
});

/** Validators of the document's success schemas, its components as $defs (what Ajv resolves by itself). */
function successValidator(): (method: string, path: string, answer: HttpResult) => string | null {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const local = (schema: object) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"#/$defs/'));
  const $defs = local(document.components.schemas);
  const compiled = new Map<string, ValidateFunction>();
  return (method, path, answer) => {
    const key = `${method} ${path} ${answer.status}`;
    let validate = compiled.get(key);
    if (!validate) {
      const schema = (document.paths[path]?.[method.toLowerCase()]?.responses[String(answer.status)]?.content?.['application/json'] as { schema?: object } | undefined)?.schema;
      if (!schema) return `${key}: the document has no JSON answer for it`;
      validate = ajv.compile({ ...local(schema), $defs });
      compiled.set(key, validate);
    }
    return validate(answer.body) ? null : `${key}: ${ajv.errorsText(validate.errors)}\n${answer.text.slice(0, 500)}`;
  };
}

test('real answers validate against the document: every resource kind, strictly', async () => {
  const admin = await t.admin();
  const failing = await startSubscriber(() => ({ status: 500 }));
  const check = successValidator();
  const answered: { method: string; path: string; answer: HttpResult }[] = [];
  /** One call, its route's pattern as the document writes it, and its expected success status. */
  const sample = async (method: string, path: string, url: string, status: number, options: { json?: unknown; token?: string; headers?: Record<string, string>; raw?: string } = {}) => {
    const answer = await call(t.url, method, url, { token: admin.token, ...options });
    assert.is(answer.status, status, `${method} ${url}: ${answer.text.slice(0, 300)}`);
    answered.push({ method, path, answer });
    return answer.body;
  };
  try {
    await sample('GET', '/api/health', '/api/health', 200);
    await sample('GET', '/api/health/ready', '/api/health/ready', 200);
    await sample('GET', '/api/auth/me', '/api/auth/me', 200);

    const dana = await createUser(t, 'dana@example.test');
    const user = (await sample('GET', '/api/admin/users', '/api/admin/users', 200)).data.find((u: { email: string }) => u.email === 'dana@example.test');
    await sample('POST', '/api/admin/users', '/api/admin/users', 201, { json: { email: 'erin@example.test', fullName: 'Erin', password: 'erin-password-1' } });
    await sample('PATCH', '/api/admin/users/{id}', `/api/admin/users/${user.id}`, 200, { json: { fullName: 'Dana D.' } });
    await sample('POST', '/api/auth/login', '/api/auth/login', 200, { json: { email: 'dana@example.test', password: dana.password } });
    await sample('PUT', '/api/auth/me/password', '/api/auth/me/password', 200, {
      token: dana.token,
      json: { currentPassword: dana.password, newPassword: 'dana-password-2' },
    });
    await sample('POST', '/api/admin/users/{id}/password', `/api/admin/users/${user.id}/password`, 200, { json: { password: 'dana-password-3' } });

    await sample('POST', '/api/admin/marketplace/extensions', '/api/admin/marketplace/extensions', 201, {
      json: { extensionKey: 'crm', name: 'CRM', category: 'sales', permissions: ['crm.deals.read'] },
    });
    await sample('PUT', '/api/admin/marketplace/extensions/{key}', '/api/admin/marketplace/extensions/crm', 200, { json: { description: 'Deals' } });
    await sample('POST', '/api/admin/marketplace/extensions/{key}/versions', '/api/admin/marketplace/extensions/crm/versions', 201, {
      json: { version: '1.0.0', artifactUrl: 'https://artifacts.example.test/crm-1.0.0.jar', requiresPlatform: '0.1.0', changelog: 'First' },
    });
    await sample('POST', '/api/admin/marketplace/extensions/{key}/versions', '/api/admin/marketplace/extensions/crm/versions', 201, {
      json: { version: '1.1.0', artifactUrl: 'https://artifacts.example.test/crm-1.1.0.jar' },
    });
    assert.is((await admin.delete('/api/admin/marketplace/extensions/crm/versions/1.1.0?reason=broken')).status, 204);
    await sample('PUT', '/api/admin/marketplace/extensions/{key}/versions/{version}/unyank', '/api/admin/marketplace/extensions/crm/versions/1.1.0/unyank', 200);
    await sample('GET', '/api/marketplace/extensions', '/api/marketplace/extensions?limit=5', 200);
    await sample('GET', '/api/marketplace/extensions/{key}', '/api/marketplace/extensions/crm', 200);
    await sample('GET', '/api/marketplace/extensions/{key}/versions/{version}', '/api/marketplace/extensions/crm/versions/1.0.0', 200);
    await sample('GET', '/api/marketplace/categories', '/api/marketplace/categories', 200);
    await sample('GET', '/api/admin/audit', '/api/admin/audit', 200);

    await sample('POST', '/api/admin/workspaces', '/api/admin/workspaces', 201, { json: { id: 'acme', name: 'Acme' } });
    await sample('PATCH', '/api/admin/workspaces/{id}', '/api/admin/workspaces/acme', 200, { json: { name: 'Acme Inc' } });
    await sample('PUT', '/api/admin/workspaces/{id}/members/{userId}', `/api/admin/workspaces/acme/members/${user.id}`, 200);
    await sample('GET', '/api/workspaces', '/api/workspaces', 200);
    await sample('GET', '/api/workspaces/{id}', '/api/workspaces/acme', 200);
    await sample('POST', '/api/workspaces/{id}/extensions', '/api/workspaces/acme/extensions', 201, { json: { extensionKey: 'crm', version: '1.0.0' } });
    await sample('PATCH', '/api/workspaces/{id}/extensions/{key}', '/api/workspaces/acme/extensions/crm', 200, { json: { version: '1.1.0' } });
    await sample('GET', '/api/workspaces/{id}/extensions', '/api/workspaces/acme/extensions', 200);

    const subscription = (
      await sample('POST', '/api/workspaces/{id}/subscriptions', '/api/workspaces/acme/subscriptions', 201, {
        json: { eventKey: 'deal.won', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: `${failing.url}/hooks` },
      })
    ).data;
    const subscriptionPath = `/api/workspaces/acme/subscriptions/${subscription.id}`;
    await sample('PATCH', '/api/workspaces/{id}/subscriptions/{subscriptionId}', subscriptionPath, 200, { json: { serviceBaseUrl: `${failing.url}/other` } });
    await sample('POST', '/api/workspaces/{id}/subscriptions/{subscriptionId}/rotate-secret', `${subscriptionPath}/rotate-secret`, 200);
    await sample('GET', '/api/workspaces/{id}/subscriptions', '/api/workspaces/acme/subscriptions', 200);

    for (const deal of [1, 2]) {
      await sample('POST', '/api/workspaces/{id}/events/publish', '/api/workspaces/acme/events/publish', 200, {
        json: { eventKey: 'deal.won', payload: { deal }, schemaVersion: '2' },
      });
    }
    await sample('POST', '/api/workspaces/{id}/subscriptions/{subscriptionId}/test', `${subscriptionPath}/test`, 202, { json: { payload: { ping: true } } });
    await sample('POST', '/api/workspaces/{id}/events/publish', '/api/workspaces/acme/events/publish', 200, {
      json: { eventKey: 'platform.notification', payload: { channel: 'deals', message: 'Deal 1 won' } },
    });
    await failing.waitForCount(3);
    const deadLetters = async () => (await admin.get('/api/admin/dead-letters')).body.meta.total as number;
    for (let tries = 0; (await deadLetters()) < 3 && tries < 200; tries += 1) await new Promise((resolve) => setTimeout(resolve, 10));

    // A signed GitHub call publishes an event that carries the provider's delivery id (sourceId).
    await sample('PUT', '/api/admin/marketplace/extensions/{key}/config', '/api/admin/marketplace/extensions/crm/config', 200, {
      json: { fields: [{ name: 'webhook.scheme', type: 'STRING', value: 'github' }, { name: 'webhook.secret', type: 'SECRET', value: 'hook-secret' }, { name: 'webhook.workspaceId', type: 'STRING', value: 'acme' }] },
    });
    await sample('GET', '/api/admin/marketplace/extensions/{key}/config', '/api/admin/marketplace/extensions/crm/config', 200);
    const hook = JSON.stringify({ action: 'opened' });
    const signature = `sha256=${createHmac('sha256', 'hook-secret').update(hook).digest('hex')}`;
    for (const delivery of ['gh-1', 'gh-1']) {
      await sample('POST', '/api/webhooks/{extensionKey}', '/api/webhooks/crm', 200, {
        token: '',
        raw: hook,
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': delivery, 'x-hub-signature-256': signature },
      });
    }
    await sample('GET', '/api/admin/webhooks/{extensionKey}/requests', '/api/admin/webhooks/crm/requests?limit=1', 200);

    const events = await sample('GET', '/api/workspaces/{id}/events', '/api/workspaces/acme/events?limit=2', 200);
    assert.ok(events.meta.nextCursor, 'a page with a cursor after it');
    const all = await sample('GET', '/api/workspaces/{id}/events', '/api/workspaces/acme/events', 200);
    assert.ok(all.data.some((event: { sourceId?: string }) => event.sourceId === 'gh-1'), 'an event from a webhook, with its sourceId');
    const won = all.data.find((event: { eventKey: string }) => event.eventKey === 'deal.won');
    await sample('GET', '/api/workspaces/{id}/events/{eventId}', `/api/workspaces/acme/events/${won.id}`, 200);
    await sample('GET', '/api/workspaces/{id}/deliveries', '/api/workspaces/acme/deliveries', 200);
    await sample('GET', '/api/workspaces/{id}/chat/channels', '/api/workspaces/acme/chat/channels', 200);
    await sample('GET', '/api/workspaces/{id}/chat/channels/{channel}/messages', '/api/workspaces/acme/chat/channels/deals/messages', 200);

    const letters = await sample('GET', '/api/admin/dead-letters', '/api/admin/dead-letters', 200);
    const letter = letters.data[0];
    await sample('GET', '/api/admin/dead-letters/{id}', `/api/admin/dead-letters/${letter.id}`, 200);
    await sample('GET', '/api/admin/dead-letters/{id}/state', `/api/admin/dead-letters/${letter.id}/state`, 200);
    await sample('POST', '/api/admin/dead-letters/{id}/replay', `/api/admin/dead-letters/${letter.id}/replay`, 202);
    await sample('POST', '/api/admin/dead-letters/replay', '/api/admin/dead-letters/replay', 202, { json: { workspaceId: 'acme', limit: 1 } });
    await sample('POST', '/api/admin/dead-letters/discard', '/api/admin/dead-letters/discard', 200, { json: { eventKey: 'platform.test' } });
    await sample('GET', '/api/admin/status', '/api/admin/status', 200);
    const danaAgain = await t.as('dana@example.test', 'dana-password-3');
    await sample('POST', '/api/auth/logout', '/api/auth/logout', 200, { token: danaAgain.token });
  } finally {
    await failing.close();
  }

  const problems = answered.map(({ method, path, answer }) => check(method, path, answer)).filter((problem) => problem !== null);
  assert.equal(problems, []);

  // Every resource kind was answered, and not as an empty list.
  const kinds: Record<string, string> = {
    user: 'GET /api/admin/users',
    'extension summary': 'GET /api/marketplace/extensions',
    'extension detail': 'GET /api/marketplace/extensions/{key}',
    version: 'GET /api/marketplace/extensions/{key}/versions/{version}',
    workspace: 'GET /api/workspaces',
    installation: 'GET /api/workspaces/{id}/extensions',
    subscription: 'GET /api/workspaces/{id}/subscriptions',
    event: 'GET /api/workspaces/{id}/events',
    'delivery record': 'GET /api/workspaces/{id}/deliveries',
    'dead letter': 'GET /api/admin/dead-letters',
    'webhook log entry': 'GET /api/admin/webhooks/{extensionKey}/requests',
    'audit record': 'GET /api/admin/audit',
    'chat message': 'GET /api/workspaces/{id}/chat/channels/{channel}/messages',
  };
  for (const [kind, route] of Object.entries(kinds)) {
    const data = answered.find(({ method, path }) => `${method} ${path}` === route)?.answer.body.data;
    assert.ok(data !== undefined && (!Array.isArray(data) || data.length > 0), `${kind}: ${route} answered ${JSON.stringify(data)}`);
  }
  const detail = answered.find(({ path }) => path === '/api/workspaces/{id}/events/{eventId}')!.answer.body.data;
  assert.ok(detail.deliveries.some((record: { attempts: unknown[] }) => record.attempts.length > 0), 'an event with an attempted delivery');

  // The live stream's items are StreamItems: every kind this test caused.
  const stream = await openStream(t.url, '/api/admin/stream', admin.token, 0);
  try {
    const kinds = ['event.published', 'delivery.dead'];
    await waitFor('items of every kind', () => kinds.every((kind) => stream.items.some((item) => item.event === kind)) || undefined);
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const defs = JSON.parse(JSON.stringify(document.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/'));
    const validate = ajv.compile({ $ref: '#/$defs/StreamItem', $defs: defs });
    const invalid = stream.items.map((item) => ({ ...item, id: String(item.id) })).filter((item) => !validate(item));
    assert.equal(invalid, [], ajv.errorsText(validate.errors));
  } finally {
    stream.close();
  }

  // The schemas are strict: a field the contract does not name, or one missing, fails.
  const me = answered.find(({ path }) => path === '/api/auth/me')!.answer;
  const tampered = (data: Record<string, unknown>) => ({ ...me, body: { ...me.body, data } });
  assert.ok(check('GET', '/api/auth/me', tampered({ ...me.body.data, passwordHash: 'x' })), 'an extra field is refused');
  const { active: _, ...withoutActive } = me.body.data;
  assert.ok(check('GET', '/api/auth/me', tampered(withoutActive)), 'a missing field is refused');
});

test.run();
