import { createHmac } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as v from 'valibot';
import { endpoints, type EndpointDeclaration, type OperationId } from '../src/contract/endpoints.js';
import { DEFAULT_CHAT_LIMITS } from '../src/daemon/chat/store.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH } from './helpers/fixtures.js';
import { startSubscriber, type Subscriber } from './helpers/subscriber.js';

/**
 * For every operation of the API document and every error status it lists,
 * the misuse that provokes that status is sent: the answer must have that
 * status and one of the codes the document lists for it. 500 and 503 are
 * faults of the daemon or its storage that no request can cause; the
 * robustness tests provoke them.
 */

const MAX_BODY_BYTES = 16 * 1024;
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const WEBHOOK_SECRET = 'misuse-hook-secret';

interface Misuse {
  method?: string;
  path?: string;
  /** A bearer token; none by default. */
  token?: string;
  /** The session cookie instead of a bearer token. */
  cookie?: string;
  headers?: Record<string, string>;
  /** Sent as is; a JSON body is given with `json`. */
  raw?: string | Buffer;
  json?: unknown;
}

interface Answer {
  status: number;
  code: string | undefined;
  text: string;
}

type Operation = { responses: Record<string, { content?: Record<string, { schema?: { properties?: { code?: { enum?: string[] } } } }> }> };

let t: TestDaemon;
let document: { paths: Record<string, Record<string, Operation>> };
let failing: Subscriber;
const tokens = { admin: '', outsider: '', disabled: '', changer: '', installation: '', collector: '' };
let deadLetterId = '';
/** The delivery that dead letter holds. */
let deadDeliveryId = '';

/** A request as a misbehaving client would send it: any Host, any header, any body. */
function send(declaration: EndpointDeclaration, misuse: Misuse, path: string): Promise<Answer> {
  const url = new URL(t.url);
  const headers: Record<string, string> = { host: url.host, ...misuse.headers };
  let body: string | Buffer | undefined = misuse.raw;
  if (misuse.json !== undefined) {
    body = JSON.stringify(misuse.json);
    headers['content-type'] ??= 'application/json';
  }
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  if (misuse.token) headers.authorization = `Bearer ${misuse.token}`;
  if (misuse.cookie) headers.cookie = `platform_token=${misuse.cookie}`;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method: misuse.method ?? declaration.method, path: misuse.path ?? path, headers },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { code?: string }).code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode ?? 0, code, text });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const entriesOf = (schema: v.GenericSchema | undefined): Record<string, v.GenericSchema> =>
  ((schema as { entries?: Record<string, v.GenericSchema> } | undefined)?.entries ?? {});

const pickValid = (schema: v.GenericSchema): string => {
  const value = ['nowhere', UNKNOWN_ID, '9.9.9'].find((candidate) => v.safeParse(schema, candidate).success);
  if (value === undefined) throw new Error('no valid value for a path parameter');
  return value;
};

/** A path with parameters that pass validation and name nothing. */
function unknownPath(declaration: EndpointDeclaration): string {
  const entries = entriesOf(declaration.params);
  return declaration.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(pickValid(entries[name]!)));
}

/** The declared path with these values. */
const pathWith = (declaration: EndpointDeclaration, values: Record<string, string>) =>
  declaration.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(values[name] ?? 'nowhere'));

/** 400: an unknown body field, else a path parameter its schema refuses, else a query value its schema refuses. */
function invalidInput(declaration: EndpointDeclaration): Misuse {
  if (declaration.body) return { token: tokens.admin, json: { notAField: 1 } };
  const params = entriesOf(declaration.params);
  for (const name of Object.keys(params)) {
    if (v.safeParse(params[name]!, 'NOT VALID!').success) continue;
    const path = declaration.path.replace(/:(\w+)/g, (_, other: string) => (other === name ? 'NOT%20VALID!' : encodeURIComponent(pickValid(params[other]!))));
    return { token: tokens.admin, path };
  }
  for (const [name, schema] of Object.entries(entriesOf(declaration.query))) {
    const bad = ['0', '-1', 'NOT VALID!', 'x'.repeat(301)].find((value) => !v.safeParse(schema, value).success);
    if (bad !== undefined) return { token: tokens.admin, path: `${unknownPath(declaration)}?${name}=${encodeURIComponent(bad)}` };
  }
  throw new Error(`${declaration.method} ${declaration.path}: no input to spoil`);
}


const overLimit = (bytes: number) => JSON.stringify({ padding: 'x'.repeat(bytes) });

/** Bodies that pass validation, for operations whose body has required fields. */
const VALID_BODIES: Partial<Record<OperationId, unknown>> = {
  updateUser: { fullName: 'Nobody' },
  resetPassword: { password: 'some-password-1' },
  updateExtension: { name: 'Nothing' },
  publishVersion: { version: '2.0.0', artifactUrl: 'https://example.test/a.zip' },
  updateExtensionConfig: { fields: [{ name: 'colour', type: 'STRING', value: 'blue' }] },
  renameWorkspace: { name: 'Nowhere' },
  installExtension: { extensionKey: 'crm' },
  updateInstallation: { enabled: false },
  createSubscription: { eventKey: 'deal.won', extensionKey: 'crm', kind: 'IN_PROCESS' },
  updateSubscription: { enabled: false },
  publishEvent: { eventKey: 'deal.won' },
};

/** The misuses that depend on the operation's own rules. */
const SPECIAL: Partial<Record<OperationId, Partial<Record<number, () => Misuse | Promise<Misuse>>>>> = {
  createSession: {
    401: () => ({ json: { email: 'admin@example.test', password: 'wrong-password' } }),
    403: () => ({ json: { email: 'dora@example.test', password: 'user-password-1' } }),
    413: () => ({ raw: overLimit(8 * 1024), headers: { 'content-type': 'application/json' } }),
    429: async () => {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        await send(endpoints.createSession, { json: { email: 'uma@example.test', password: 'wrong-password' } }, endpoints.createSession.path);
      }
      return { json: { email: 'uma@example.test', password: 'wrong-password' } };
    },
  },
  changePassword: {
    401: () => ({ token: tokens.changer, json: { currentPassword: 'wrong-password', newPassword: 'another-password-1' } }),
    413: () => ({ token: tokens.changer, raw: overLimit(8 * 1024), headers: { 'content-type': 'application/json' } }),
    429: async () => {
      const wrong = { token: tokens.changer, json: { currentPassword: 'wrong-password', newPassword: 'another-password-1' } };
      for (let attempt = 0; attempt < 2; attempt += 1) await send(endpoints.changePassword, wrong, endpoints.changePassword.path);
      return wrong;
    },
  },
  createUser: { 409: () => ({ token: tokens.admin, json: { email: 'admin@example.test', fullName: 'Again', password: 'admin-password-2' } }) },
  // The only active ADMIN cannot lose the role, nor delete their own account.
  updateUser: { 409: async () => ({ token: tokens.admin, path: `/api/admin/users/${await adminId()}`, json: { roles: ['USER'] } }) },
  deleteUser: { 409: async () => ({ token: tokens.admin, path: `/api/admin/users/${await adminId()}` }) },
  createWorkspace: { 409: () => ({ token: tokens.admin, json: { id: 'acme', name: 'Acme again' } }) },
  createExtension: { 409: () => ({ token: tokens.admin, json: { extensionKey: 'crm', name: 'CRM again' } }) },
  publishVersion: {
    409: () => ({ token: tokens.admin, path: pathWith(endpoints.publishVersion, { key: 'crm' }), json: { version: '1.0.0', artifactUrl: 'https://example.test/a.zip' } }),
  },
  listAuditRecords: { 404: () => ({ token: tokens.admin, path: '/api/admin/audit?extensionKey=nowhere' }) },
  deleteWorkspace: { 409: () => ({ token: tokens.admin, path: pathWith(endpoints.deleteWorkspace, { id: 'acme' }) }) },
  installExtension: { 409: () => ({ token: tokens.admin, path: pathWith(endpoints.installExtension, { id: 'acme' }), json: { extensionKey: 'crm' } }) },
  updateInstallation: {
    409: () => ({ token: tokens.admin, path: pathWith(endpoints.updateInstallation, { id: 'acme', key: 'crm' }), json: { version: '1.0.0' } }),
  },
  createSubscription: {
    409: () => ({
      token: tokens.admin,
      path: pathWith(endpoints.createSubscription, { id: 'acme' }),
      json: { eventKey: 'deal.won', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: failing.url },
    }),
  },
  // The workspace keeps one chat channel, and has it.
  publishEvent: {
    409: () => ({
      token: tokens.admin,
      path: pathWith(endpoints.publishEvent, { id: 'acme' }),
      json: { eventKey: 'platform.notification', payload: { channel: 'another', message: 'hello' } },
    }),
  },
  // A user has at most 100 API tokens.
  createApiToken: {
    409: async () => {
      const make = () => send(endpoints.createApiToken, { token: tokens.collector, json: { name: 'one', scopes: ['events:read'] } }, endpoints.createApiToken.path);
      for (let made = 0; made < 100; made += 1) await make();
      return { token: tokens.collector, json: { name: 'one too many', scopes: ['events:read'] } };
    },
  },
  // Its version publishes nothing: it has no installation token.
  rotateInstallationToken: { 409: () => ({ token: tokens.admin, path: pathWith(endpoints.rotateInstallationToken, { id: 'acme', key: 'crm' }) }) },
  getOwnInstallation: { 415: () => ({ token: tokens.installation, raw: 'plain words', headers: { 'content-type': 'text/plain' } }) },
  listDeadLetters: { 404: () => ({ token: tokens.admin, path: '/api/admin/dead-letters?workspaceId=nowhere' }) },
  replayDeadLetters: { 404: () => ({ token: tokens.admin, json: { extensionKey: 'nowhere' } }) },
  discardDeadLetters: { 404: () => ({ token: tokens.admin, json: { workspaceId: 'nowhere' } }) },
  // Its subscription is disabled: nothing would receive it.
  replayDeadLetter: { 409: () => ({ token: tokens.admin, path: pathWith(endpoints.replayDeadLetter, { id: deadLetterId }) }) },
  redeliverDelivery: { 409: () => ({ token: tokens.admin, path: pathWith(endpoints.redeliverDelivery, { id: 'acme', deliveryId: deadDeliveryId }) }) },
  receiveWebhook: {
    400: () => ({ path: '/api/webhooks/crm', raw: '[1]', headers: { 'content-type': 'application/json' } }),
    401: () => ({ path: '/api/webhooks/crm', raw: '{"action":"opened"}', headers: githubHeaders('sha256=0000') }),
    413: () => ({ path: '/api/webhooks/crm', raw: overLimit(MAX_BODY_BYTES), headers: { 'content-type': 'application/json' } }),
  },
  listWebhookRequests: {
    400: () => ({ token: tokens.admin, path: '/api/admin/webhooks/crm/requests?limit=0' }),
    // A cursor whose position was dropped for newer calls since it was read.
    409: async () => {
      const first = await send(endpoints.listWebhookRequests, { token: tokens.admin }, '/api/admin/webhooks/crm/requests?limit=1');
      const cursor = (JSON.parse(first.text) as { meta: { nextCursor: string } }).meta.nextCursor;
      for (let call = 0; call < 1000; call += 1) {
        await send(endpoints.receiveWebhook, { raw: '{"n":1}', headers: githubHeaders('sha256=0000') }, '/api/webhooks/crm');
      }
      return { token: tokens.admin, path: `/api/admin/webhooks/crm/requests?cursor=${encodeURIComponent(cursor)}` };
    },
  },
};

const githubHeaders = (signature: string) => ({
  'content-type': 'application/json',
  'x-github-event': 'issues',
  'x-github-delivery': `d-${Math.random()}`,
  'x-hub-signature-256': signature,
});

let admin: string | undefined;
const adminId = async () => {
  if (admin === undefined) {
    const me = await send(endpoints.getCurrentUser, { token: tokens.admin }, '/api/auth/me');
    admin = (JSON.parse(me.text) as { data: { id: string } }).data.id;
  }
  return admin;
};

/** The misuse that yields this status on any operation that lists it. */
async function misuseFor(operationId: OperationId, status: number): Promise<Misuse> {
  const special = SPECIAL[operationId]?.[status];
  if (special) return special();
  const declaration: EndpointDeclaration = endpoints[operationId];
  switch (status) {
    case 400:
      return invalidInput(declaration);
    case 401:
      return {};
    case 403:
      if (declaration.access === 'admin' || declaration.access === 'member') return { token: tokens.outsider };
      if (declaration.method !== 'GET') return { cookie: tokens.admin, headers: { 'sec-fetch-site': 'cross-site' } };
      return { token: tokens.disabled };
    case 404:
      return { token: tokens.admin, ...(declaration.body ? { json: VALID_BODIES[operationId] ?? {} } : {}) };
    case 413:
      return { token: tokens.admin, raw: overLimit(MAX_BODY_BYTES), headers: { 'content-type': 'application/json' } };
    case 415:
      return { token: tokens.admin, raw: 'plain words', headers: { 'content-type': 'text/plain' } };
    case 421:
      return { token: tokens.admin, headers: { host: 'attacker.example' } };
    case 429:
      return streamsExhausted(operationId);
    default:
      throw new Error(`no misuse for ${status}`);
  }
}

/** 429 on a stream: the caller has as many streams open as one user may. */
async function streamsExhausted(operationId: OperationId): Promise<Misuse> {
  const opened: IncomingMessage[] = [];
  for (let stream = 0; stream < 20; stream += 1) {
    opened.push(
      await new Promise<IncomingMessage>((resolve, reject) => {
        const url = new URL('/api/admin/stream', t.url);
        request(url, { headers: { authorization: `Bearer ${tokens.admin}` } }, resolve).on('error', reject).end();
      }),
    );
  }
  holding.push(...opened);
  return { token: tokens.admin, path: operationId === 'streamWorkspace' ? '/api/workspaces/acme/stream' : '/api/admin/stream' };
}
const holding: IncomingMessage[] = [];

test.before(async () => {
  t = await startTestDaemon({
    maxBodyBytes: MAX_BODY_BYTES,
    loginThrottle: { maxFailures: 2, windowSeconds: 600 },
    chat: { ...DEFAULT_CHAT_LIMITS, channelsPerWorkspace: 1 },
    // No retries: a failed delivery is a dead letter at once.
    dispatch: { ...FAST_DISPATCH, retrySchedule: [] },
  });
  document = JSON.parse((await t.anon.get('/api/openapi.json')).text);
  failing = await startSubscriber(() => ({ status: 500 }));
  const adminClient = await t.admin();
  tokens.admin = adminClient.token;
  tokens.outsider = (await createUser(t, 'uma@example.test')).token;
  tokens.changer = (await createUser(t, 'carl@example.test')).token;
  const dora = await createUser(t, 'dora@example.test');
  tokens.disabled = dora.token;
  const ok = (answer: { status: number; text: string }, status: number) => assert.is(answer.status, status, answer.text);

  ok(await adminClient.post('/api/admin/marketplace/extensions', { extensionKey: 'crm', name: 'CRM' }), 201);
  for (const version of ['1.0.0', '1.1.0']) {
    ok(await adminClient.post('/api/admin/marketplace/extensions/crm/versions', { version, artifactUrl: `https://example.test/crm-${version}.zip` }), 201);
  }
  ok(await adminClient.post('/api/admin/workspaces', { id: 'acme', name: 'Acme' }), 201);
  ok(await adminClient.post('/api/workspaces/acme/extensions', { extensionKey: 'crm' }), 201);
  const subscribed = await adminClient.post('/api/workspaces/acme/subscriptions', {
    eventKey: 'deal.won',
    extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: failing.url,
  });
  ok(subscribed, 201);
  ok(await adminClient.post('/api/workspaces/acme/events/publish', { eventKey: 'deal.won', payload: { deal: 1 } }), 200);
  ok(await adminClient.post('/api/workspaces/acme/events/publish', { eventKey: 'platform.notification', payload: { channel: 'one', message: 'hi' } }), 200);
  for (let tries = 0; deadLetterId === '' && tries < 500; tries += 1) {
    const [letter] = (await adminClient.get('/api/admin/dead-letters')).body.data;
    [deadLetterId, deadDeliveryId] = [letter?.id ?? '', letter?.deliveryId ?? ''];
    if (deadLetterId === '') await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.ok(deadLetterId, 'a dead letter');
  ok(await adminClient.patch(`/api/workspaces/acme/subscriptions/${subscribed.body.data.id}`, { enabled: false }), 200);
  ok(
    await adminClient.put('/api/admin/marketplace/extensions/crm/config', {
      fields: [
        { name: 'webhook.scheme', type: 'STRING', value: 'github' },
        { name: 'webhook.secret', type: 'SECRET', value: WEBHOOK_SECRET },
        { name: 'webhook.workspaceId', type: 'STRING', value: 'acme' },
      ],
    }),
    200,
  );
  const hook = '{"action":"opened"}';
  const signed = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(hook).digest('hex')}`;
  ok(await send(endpoints.receiveWebhook, { raw: hook, headers: githubHeaders(signed) }, '/api/webhooks/crm'), 200);
  ok(await send(endpoints.receiveWebhook, { raw: hook, headers: githubHeaders(signed) }, '/api/webhooks/crm'), 200);
  ok(await adminClient.patch(`/api/admin/users/${dora.id}`, { active: false }), 200);
  tokens.collector = (await createUser(t, 'tess@example.test')).token;
  ok(await adminClient.post('/api/admin/marketplace/extensions', { extensionKey: 'sender', name: 'Sender' }), 201);
  const manifest = { manifestVersion: 1, extensionKey: 'sender', version: '1.0.0', publishes: [{ eventKey: 'sender.sent', schemaVersion: '1', schema: {} }] };
  ok(await adminClient.post('/api/admin/marketplace/extensions/sender/versions', { version: '1.0.0', artifactUrl: 'https://example.test/s.zip', manifest }), 201);
  const installed = await adminClient.post('/api/workspaces/acme/extensions', { extensionKey: 'sender' });
  ok(installed, 201);
  tokens.installation = installed.body.data.installationToken;
});

test.after(async () => {
  for (const stream of holding) stream.destroy();
  await failing.close();
  await t.destroy();
});

test('every documented error status of every operation is provoked, answered as documented', async () => {
  const problems: string[] = [];
  let provoked = 0;
  for (const [operationId, declaration] of Object.entries(endpoints) as [OperationId, EndpointDeclaration][]) {
    const documentPath = declaration.path.replace(/:(\w+)/g, '{$1}');
    const operation = document.paths[documentPath]![declaration.method.toLowerCase()]!;
    for (const [status, response] of Object.entries(operation.responses)) {
      const expected = Number(status);
      if (expected < 400 || expected === 500 || expected === 503) continue;
      const where = `${operationId} (${declaration.method} ${declaration.path}) expecting ${expected}`;
      let misuse: Misuse;
      try {
        misuse = await misuseFor(operationId, expected);
      } catch (error) {
        problems.push(`${where}: ${(error as Error).message}`);
        continue;
      }
      const answer = await send(declaration, misuse, misuse.path ?? unknownPath(declaration));
      const listed = response.content?.['application/json']?.schema?.properties?.code?.enum ?? [];
      if (answer.status !== expected) problems.push(`${where}: answered ${answer.status} ${answer.text.slice(0, 200)}`);
      else if (answer.code === undefined || !listed.includes(answer.code)) problems.push(`${where}: code ${answer.code} is not among ${listed.join(', ')}`);
      else provoked += 1;
      if (operation.responses[String(answer.status)] === undefined) problems.push(`${where}: ${answer.status} is not documented`);
    }
    // Streams hold their slots until the end; free them for the next operation.
    for (const stream of holding.splice(0)) stream.destroy();
  }
  assert.equal(problems, []);
  assert.ok(provoked > 300, `${provoked} statuses provoked`);
});

test.run();
