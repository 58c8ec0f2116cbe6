import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildRoutes } from '../src/daemon/http/index.js';
import { runCli } from './helpers/cli.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { tempDir } from './helpers/temp.js';

interface Operation {
  parameters: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<string, { content?: Record<string, { schema: { properties?: { code?: { enum?: string[] } } } }> }>;
  security?: unknown[];
}
type OpenApi = { openapi: string; paths: Record<string, Record<string, Operation>> };

let t: TestDaemon;
let document: OpenApi;

test.before(async () => {
  t = await startTestDaemon();
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
  for (const { method, path, operation } of operations()) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
    const declared = operation.parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
    assert.equal(declared.sort(), names.sort(), `${method} ${path}`);
  }
});

test('parameters, bodies and error codes come from the endpoint specs', () => {
  const login = document.paths['/api/auth/login']!.post!;
  const loginBody = login.requestBody!.content['application/json']!.schema;
  assert.ok(loginBody.properties?.email && loginBody.properties.password, JSON.stringify(loginBody));
  assert.equal(login.security, []);
  assert.ok(login.responses['429'], 'a login can be throttled');

  const browse = document.paths['/api/marketplace/extensions']!.get!;
  assert.ok(browse.parameters.some((parameter) => parameter.in === 'query' && parameter.name === 'limit'));

  const users = document.paths['/api/admin/users']!.get!;
  assert.equal(users.responses['401']!.content!['application/json']!.schema.properties!.code!.enum, ['UNAUTHORIZED']);
  assert.equal(users.responses['403']!.content!['application/json']!.schema.properties!.code!.enum, ['ACCOUNT_DISABLED', 'FORBIDDEN']);
  assert.is(users.security, undefined, 'protected: the document-wide cookie or bearer applies');

  const workspace = document.paths['/api/workspaces/{id}']!.get!;
  assert.ok(workspace.responses['404'], 'a path with an id can name nothing');
  assert.ok(document.paths['/api/admin/backup']!.get!.responses['200']!.content!['application/gzip']);
  assert.ok(document.paths['/api/webhooks/{extensionKey}']!.post!.requestBody!.content['*/*']);
});

test('every operation lists the errors its inputs and access imply', () => {
  for (const { method, path, operation } of operations()) {
    const codes = (status: string) => operation.responses[status]?.content?.['application/json']?.schema.properties?.code?.enum ?? [];
    const where = `${method} ${path}`;
    if (operation.parameters.length > 0 || operation.requestBody) assert.ok(codes('400').includes('VALIDATION_ERROR'), where);
    if (operation.requestBody?.content['application/json']) assert.equal(codes('413'), ['PAYLOAD_TOO_LARGE'], where);
    if (operation.security === undefined) assert.ok(codes('401').includes('UNAUTHORIZED'), where);
    if (path.includes('{')) assert.ok(codes('404').includes('NOT_FOUND'), where);
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

test.run();
