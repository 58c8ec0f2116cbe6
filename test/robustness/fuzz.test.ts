import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ERROR_STATUS } from '../../src/contract/errors.js';
import { buildRoutes } from '../../src/daemon/http/index.js';
import { keyHash } from '../../src/daemon/http/json-scan.js';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { MAX_TOKENS_PER_USER } from '../../src/contract/requests.js';
import { configureExtension, publishExtension, workspaceWith } from '../helpers/fixtures.js';
import { call, type HttpResult } from '../helpers/http.js';
import {
  changedFiles,
  deepArrays,
  deepObjects,
  escapedKey,
  memberPaths,
  objectPaths,
  rawClient,
  rewrite,
  settledSnapshot,
  snapshotDataDir,
  valueAt,
  withLeadingMembers,
  type Json,
  type RawAnswer,
  type RawRequest,
} from './helpers-fuzz.js';

/**
 * The hostile-input pass. Every route the daemon serves (the route
 * table, not a hand-kept list) gets hostile bodies, content types, path
 * parameters, query strings and methods, from an anonymous caller, a USER and
 * an ADMIN, one request at a time. Every answer must be a 4xx envelope (a 2xx
 * only where the request is a harmless read), and no file of the data
 * directory may change: it is hashed after every request. A route that takes
 * no body ignores a JSON one (docs/decisions.md), so it must answer such a
 * request as it answers the same request without the body.
 */

/** Small, so that "just over the limit" is cheap to send; the 200 KB values below still fit. */
const MAX_BODY = 256 * 1024;
const NESTING = 10_000;
const HUGE = 200 * 1024;
const LONG_PARAM = 10 * 1024;

const WORKSPACE = 'fuzz-ws';
const EXTENSION = 'fuzz-ext';
const WEBHOOK_EXTENSION = 'fuzz-hook';
/** A well-formed key or workspace id that does not exist. */
const MISSING = 'missing-thing';
const MISSING_ID = '00000000-0000-4000-8000-000000000000';

type Identity = 'anonymous' | 'user' | 'admin';
const IDENTITIES: Identity[] = ['anonymous', 'user', 'admin'];

interface RouteFixture {
  /** `installation`: an extension's installation token only, which no caller here has. */
  access: 'public' | 'user' | 'admin' | 'installation';
  params?: Record<string, string>;
  /** Parameters that take any text (a chat channel): a hostile value there may be a genuinely valid read. */
  freeTextParams?: string[];
  query?: Record<string, 'int' | 'text'>;
  /**
   * A body the schema accepts and the domain refuses (a duplicate, an unknown
   * target, a wrong password): whatever a mutation of it leaves valid is still
   * refused, so no case can change state by being accidentally valid.
   */
  body?: Json;
  /** The status of that request for a caller who passes authentication and authorization. */
  baseline: number[];
  /** Why a mutation of the body that stays valid may succeed. */
  validMutationsSucceed?: string;
  /** Reads any content type (the webhook endpoint). */
  anyContentType?: true;
  /** Acts without reading a body: only content-type refusals may be sent by a logged-in caller. */
  endsTheSession?: true;
  /** The route's own body limit, below the daemon's: a larger body is 413 whatever else is wrong with it. */
  maxBody?: number;
  /** Sent with every request: a live stream refuses a bad Last-Event-ID (400) rather than stream forever. */
  headers?: Record<string, string>;
}

/** Every route, with inputs that reach its validation. The test fails when a served route is missing here. */
/**
 * Routes whose success is not an envelope, which this pass judges by: they are
 * refused and checked in their own tests (test/operability.test.ts, test/backup.test.ts, test/openapi.test.ts).
 */
const NOT_ENVELOPE_ROUTES: Record<string, string> = {
  'GET /metrics': 'the Prometheus text format',
  'GET /api/admin/backup': 'a gzipped tar archive',
  'GET /api/openapi.json': 'the OpenAPI document, not wrapped in the envelope',
  'GET /api/schemas/extension-manifest.json': 'a JSON Schema document, not wrapped in the envelope',
};

const ROUTES: Record<string, RouteFixture> = {
  'GET /api/health': { access: 'public', baseline: [200] },
  'GET /api/health/ready': { access: 'public', baseline: [200] },
  'POST /api/auth/login': {
    access: 'public',
    body: { email: 'nobody@example.test', password: 'not-the-password' },
    // Wrong credentials, then throttled for that e-mail: both refusals.
    baseline: [401, 429],
    maxBody: 8 * 1024,
  },
  'GET /api/auth/session': { access: 'public', baseline: [200] },
  'GET /api/auth/me': { access: 'user', baseline: [200] },
  'PUT /api/auth/me/password': {
    access: 'user',
    body: { currentPassword: 'not-the-password', newPassword: 'another-password-1' },
    baseline: [401],
    maxBody: 8 * 1024,
  },
  'POST /api/auth/logout': { access: 'user', baseline: [200], endsTheSession: true },
  // Both callers have as many tokens as a user may: a valid body is refused too.
  'POST /api/auth/tokens': { access: 'user', body: { name: 'fuzz', scopes: ['events:read'], workspaces: [WORKSPACE], expiresInDays: 30 }, baseline: [409] },
  'GET /api/auth/tokens': { access: 'user', baseline: [200] },
  'DELETE /api/auth/tokens/:tokenId': { access: 'user', params: { tokenId: MISSING_ID }, baseline: [404] },
  'GET /api/admin/tokens': { access: 'admin', baseline: [200] },
  'DELETE /api/admin/tokens/:tokenId': { access: 'admin', params: { tokenId: MISSING_ID }, baseline: [404] },
  // For an extension's installation token only: every caller here is refused.
  'GET /api/extension/installation': { access: 'installation', baseline: [401] },
  'POST /api/admin/users': {
    access: 'admin',
    body: { email: ADMIN.email, fullName: 'Fuzz', password: 'fuzz-password-1', roles: ['USER'] },
    baseline: [409],
  },
  'GET /api/admin/users': { access: 'admin', baseline: [200] },
  'PATCH /api/admin/users/:id': {
    access: 'admin',
    params: { id: MISSING_ID },
    body: { fullName: 'Fuzz', active: true },
    baseline: [404],
  },
  'DELETE /api/admin/users/:id': { access: 'admin', params: { id: MISSING_ID }, baseline: [404] },
  'POST /api/admin/users/:id/password': {
    access: 'admin',
    params: { id: MISSING_ID },
    body: { password: 'fuzz-password-1' },
    baseline: [404],
  },
  'GET /api/marketplace/extensions': {
    access: 'public',
    query: { search: 'text', category: 'text', limit: 'int', offset: 'int' },
    baseline: [200],
  },
  'GET /api/marketplace/extensions/:key': {
    access: 'public',
    params: { key: EXTENSION },
    query: { platformVersion: 'text', sdkVersion: 'text' },
    baseline: [200],
  },
  'GET /api/event-types': { access: 'public', baseline: [200] },
  'GET /api/event-types/:eventKey': { access: 'public', params: { eventKey: 'platform.notification' }, baseline: [200] },
  'GET /api/marketplace/extensions/:key/versions/:version': {
    access: 'public',
    params: { key: EXTENSION, version: '1.0.0' },
    baseline: [200],
  },
  'GET /api/marketplace/categories': { access: 'public', baseline: [200] },
  'POST /api/admin/marketplace/extensions': {
    access: 'admin',
    body: { extensionKey: EXTENSION, name: 'Fuzz', description: 'd', category: 'fuzz', permissions: [`${EXTENSION}.items.read`] },
    baseline: [409],
  },
  'PUT /api/admin/marketplace/extensions/:key': {
    access: 'admin',
    params: { key: MISSING },
    body: { name: 'Renamed', permissions: [`${MISSING}.items.read`] },
    baseline: [404],
  },
  'POST /api/admin/marketplace/extensions/:key/versions': {
    access: 'admin',
    params: { key: MISSING },
    body: { version: '9.9.9', artifactUrl: 'https://artifacts.example.test/a.jar', changelog: 'c' },
    baseline: [404],
  },
  'DELETE /api/admin/marketplace/extensions/:key/versions/:version': {
    access: 'admin',
    params: { key: EXTENSION, version: '9.9.9' },
    query: { reason: 'text' },
    baseline: [404],
  },
  'PUT /api/admin/marketplace/extensions/:key/versions/:version/unyank': {
    access: 'admin',
    params: { key: EXTENSION, version: '9.9.9' },
    baseline: [404],
  },
  'GET /api/admin/audit': {
    access: 'admin',
    query: { extensionKey: 'text', version: 'text', action: 'text', limit: 'int', offset: 'int', cursor: 'text' },
    baseline: [200],
  },
  'POST /api/admin/workspaces': { access: 'admin', body: { id: WORKSPACE, name: 'Fuzz' }, baseline: [409] },
  'GET /api/workspaces': { access: 'user', baseline: [200] },
  'GET /api/workspaces/:id': { access: 'user', params: { id: WORKSPACE }, baseline: [200] },
  'GET /api/workspaces/:id/members': { access: 'user', params: { id: WORKSPACE }, baseline: [200] },
  'PUT /api/admin/workspaces/:id/members/:userId': { access: 'admin', params: { id: MISSING, userId: MISSING_ID }, baseline: [404] },
  'DELETE /api/admin/workspaces/:id/members/:userId': {
    access: 'admin',
    params: { id: MISSING, userId: MISSING_ID },
    baseline: [404],
  },
  'PATCH /api/admin/workspaces/:id': { access: 'admin', params: { id: MISSING }, body: { name: 'Renamed' }, baseline: [404] },
  'DELETE /api/admin/workspaces/:id': { access: 'admin', params: { id: MISSING }, query: { force: 'text' }, baseline: [404] },
  'POST /api/workspaces/:id/extensions': {
    access: 'admin',
    params: { id: MISSING },
    body: { extensionKey: EXTENSION, version: '1.0.0' },
    baseline: [404],
  },
  'GET /api/workspaces/:id/extensions': { access: 'user', params: { id: WORKSPACE }, baseline: [200] },
  'PATCH /api/workspaces/:id/extensions/:key': {
    access: 'admin',
    params: { id: WORKSPACE, key: MISSING },
    body: { enabled: false, version: '1.0.0' },
    baseline: [404],
  },
  'DELETE /api/workspaces/:id/extensions/:key': { access: 'admin', params: { id: WORKSPACE, key: MISSING }, baseline: [404] },
  'POST /api/workspaces/:id/extensions/:key/rotate-token': { access: 'admin', params: { id: WORKSPACE, key: MISSING }, baseline: [404] },
  'POST /api/workspaces/:id/subscriptions': {
    access: 'admin',
    params: { id: MISSING },
    body: {
      eventKey: 'fuzz.happened',
      extensionKey: EXTENSION,
      kind: 'EXTERNAL_SERVICE',
      serviceBaseUrl: 'https://subscriber.example.test',
    },
    baseline: [404],
  },
  'GET /api/workspaces/:id/subscriptions': { access: 'user', params: { id: WORKSPACE }, baseline: [200] },
  'DELETE /api/workspaces/:id/subscriptions/:subscriptionId': {
    access: 'admin',
    params: { id: WORKSPACE, subscriptionId: MISSING_ID },
    baseline: [404],
  },
  'PATCH /api/workspaces/:id/subscriptions/:subscriptionId': {
    access: 'admin',
    params: { id: WORKSPACE, subscriptionId: MISSING_ID },
    body: { enabled: true, serviceBaseUrl: 'https://example.test/hooks' },
    baseline: [404],
  },
  'POST /api/workspaces/:id/subscriptions/:subscriptionId/rotate-secret': {
    access: 'admin',
    params: { id: WORKSPACE, subscriptionId: MISSING_ID },
    baseline: [404],
  },
  'POST /api/workspaces/:id/subscriptions/:subscriptionId/test': {
    access: 'admin',
    params: { id: WORKSPACE, subscriptionId: MISSING_ID },
    body: { payload: { n: 1 } },
    baseline: [404],
  },
  'POST /api/workspaces/:id/events/publish': {
    access: 'user',
    params: { id: WORKSPACE },
    // A chat notification without its message: refused at publish, and nothing is recorded.
    body: { eventKey: 'platform.notification', actor: 'fuzz', schemaVersion: '1', payload: { channel: 'fuzz', sender: 'fuzz' } },
    baseline: [400],
  },
  'GET /api/workspaces/:id/events': {
    access: 'user',
    params: { id: WORKSPACE },
    query: { eventKey: 'text', deliveries: 'text', since: 'text', until: 'text', limit: 'int', cursor: 'text' },
    baseline: [200],
  },
  'GET /api/workspaces/:id/events/:eventId': { access: 'user', params: { id: WORKSPACE, eventId: MISSING_ID }, baseline: [404] },
  'GET /api/workspaces/:id/deliveries': {
    access: 'user',
    params: { id: WORKSPACE },
    query: { status: 'text', subscriptionId: 'text', eventKey: 'text', since: 'text', until: 'text', limit: 'int', cursor: 'text' },
    baseline: [200],
  },
  'GET /api/workspaces/:id/deliveries/:deliveryId': { access: 'user', params: { id: WORKSPACE, deliveryId: MISSING_ID }, baseline: [404] },
  'POST /api/workspaces/:id/deliveries/:deliveryId/redeliver': { access: 'admin', params: { id: WORKSPACE, deliveryId: MISSING_ID }, baseline: [404] },
  'GET /api/workspaces/:id/chat/channels': { access: 'user', params: { id: WORKSPACE }, baseline: [200] },
  'GET /api/workspaces/:id/chat/channels/:channel/messages': {
    access: 'user',
    params: { id: WORKSPACE, channel: 'fuzz' },
    freeTextParams: ['channel'],
    query: { limit: 'int' },
    baseline: [200],
  },
  'GET /api/admin/dead-letters': {
    access: 'admin',
    query: { workspaceId: 'text', eventKey: 'text', extensionKey: 'text', limit: 'int', offset: 'int' },
    baseline: [200],
  },
  'POST /api/admin/dead-letters/replay': {
    access: 'admin',
    body: { workspaceId: MISSING, eventKey: 'fuzz.happened', extensionKey: EXTENSION, limit: 10 },
    baseline: [404],
    validMutationsSucceed: 'there is no dead letter, so any valid filter replays none',
  },
  'POST /api/admin/dead-letters/discard': {
    access: 'admin',
    body: { workspaceId: MISSING, eventKey: 'fuzz.happened', extensionKey: EXTENSION },
    baseline: [404],
    validMutationsSucceed: 'there is no dead letter, so any valid filter discards none',
  },
  'GET /api/admin/dead-letters/:id/state': { access: 'admin', params: { id: MISSING_ID }, baseline: [200] },
  'GET /api/admin/dead-letters/:id': { access: 'admin', params: { id: MISSING_ID }, baseline: [404] },
  'DELETE /api/admin/dead-letters/:id': { access: 'admin', params: { id: MISSING_ID }, baseline: [404] },
  'POST /api/admin/dead-letters/:id/replay': { access: 'admin', params: { id: MISSING_ID }, baseline: [404] },
  'GET /api/admin/status': { access: 'admin', baseline: [200] },
  'GET /api/workspaces/:id/stream': {
    access: 'user',
    params: { id: WORKSPACE },
    headers: { 'last-event-id': 'not-an-id' },
    baseline: [400],
  },
  'GET /api/admin/stream': { access: 'admin', headers: { 'last-event-id': 'not-an-id' }, baseline: [400] },
  'GET /api/admin/marketplace/extensions/:key/config': { access: 'admin', params: { key: WEBHOOK_EXTENSION }, baseline: [200] },
  'PUT /api/admin/marketplace/extensions/:key/config': {
    access: 'admin',
    params: { key: MISSING },
    body: { fields: [{ name: 'fuzz.setting', type: 'STRING', value: 'x' }] },
    baseline: [404],
  },
  'DELETE /api/admin/marketplace/extensions/:key/config/:field': {
    access: 'admin',
    params: { key: MISSING, field: 'fuzz.setting' },
    baseline: [404],
  },
  'GET /api/admin/webhooks/:extensionKey/requests': {
    access: 'admin',
    params: { extensionKey: WEBHOOK_EXTENSION },
    query: { limit: 'int', cursor: 'text' },
    baseline: [200],
  },
  'POST /api/webhooks/:extensionKey': {
    access: 'public',
    params: { extensionKey: WEBHOOK_EXTENSION },
    // Sent without the configured API key: read, parsed, then rejected.
    body: { action: 'opened', number: 1, labels: ['fuzz'], sender: { login: 'fuzz' } },
    baseline: [401],
    anyContentType: true,
  },
};

/** The API's 4xx codes and their statuses, from the contract; 421 is the Host check's, before any route. */
const CLIENT_ERROR_STATUS: Record<string, number> = Object.fromEntries(
  Object.entries(ERROR_STATUS).filter(([code, status]) => status < 500 && code !== 'MISDIRECTED_REQUEST'),
);

/** An error answer that is larger than this echoes the input back. */
const MAX_ERROR_ANSWER = 16 * 1024;
const LEAK = /\bat \S+ \(|node:internal|node_modules|file:\/\/|\.(?:[cm]?[jt]s):\d+|\/(?:home|root|tmp|usr|var|work)\//;

type Expect =
  /** Past authentication and authorization: exactly this code. */
  | { kind: 'code'; code: string }
  /** The route does not read this input: the same answer as the baseline request. */
  | { kind: 'baseline' }
  /** Any 4xx. */
  | { kind: 'refused' }
  /** A 4xx, or a 2xx: the request is a genuinely valid read (or a replay of nothing). */
  | { kind: 'refusedOrHarmless' }
  /** Refused by Node's HTTP parser before h3 sees it (server.ts): a 4xx, and an envelope if there is a body. */
  | { kind: 'parser' };

interface Case {
  route: string;
  identity: Identity;
  what: string;
  request: RawRequest;
  /** Authentication and authorization come first: a caller stopped there gets that answer instead. */
  gated: boolean;
  expect: Expect;
}

interface Answer {
  status: number;
  code: string | null;
}

const json = (text: string) => Buffer.from(text, 'utf8');
const refused: Expect = { kind: 'refused' };
const code = (expected: string): Expect => ({ kind: 'code', code: expected });

/** Where the caller stops before any input is read: 401 or 403, or null when it passes. */
function gateOf(fixture: RouteFixture, identity: Identity): Answer | null {
  if (fixture.access === 'public') return null;
  if (identity === 'anonymous' || fixture.access === 'installation') return { status: 401, code: 'UNAUTHORIZED' };
  if (fixture.access === 'admin' && identity === 'user') return { status: 403, code: 'FORBIDDEN' };
  return null;
}

function pathOf(pattern: string, params: Record<string, string>): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for :${name} in ${pattern}`);
    return value;
  });
}

/**
 * Values put in place of each field of a route's body. A string stands where
 * an identifier is expected, so that no schema here accepts it there. Numbers
 * beyond a double are refused before any schema sees them.
 */
const HOSTILE_VALUES: [string, (original: Json) => string, string?][] = [
  ['[]', () => '[]'],
  ['{}', () => '{}'],
  ['42', () => '42'],
  ['-1', () => '-1'],
  ['0.5', () => '0.5'],
  ['1e999 (Infinity to JSON.parse)', () => '1e999', 'VALIDATION_ERROR'],
  ['a 400-digit number', () => '9'.repeat(400), 'VALIDATION_ERROR'],
  ['true', () => 'true'],
  ['null', () => 'null'],
  ['""', () => '""'],
  ['free text', () => '"Not a key, e-mail, URL or version!"'],
  ['NUL', () => '"\\u0000"'],
  ['a lone surrogate', () => '"\\ud800"'],
  ['unicode', () => '"é👍"'],
  ['a 200 KB string', () => JSON.stringify('x'.repeat(HUGE))],
  [`${NESTING} nested arrays`, () => deepArrays(NESTING)],
  [`${NESTING} nested objects`, () => deepObjects(NESTING)],
  ['wrapped in an array', (original) => `[${JSON.stringify(original)}]`],
];

/** Bodies that are wrong as a whole, whatever the route. */
function wholeBodyCases(
  fixture: RouteFixture,
): { what: string; body: Buffer; chunked?: true; headers?: Record<string, string>; expect: Expect }[] {
  const template = JSON.stringify(fixture.body ?? { unexpected: 1 });
  const firstKey = Object.keys((fixture.body ?? { unexpected: 1 }) as object)[0]!;
  const stringWith = (bytes: number[]) => Buffer.concat([json(`{${JSON.stringify(firstKey)}:"`), Buffer.from(bytes), json('"}')]);
  const validation = code('VALIDATION_ERROR');
  const invalidJson = code('INVALID_JSON');
  const overLimit = json(`{"padding":"${'x'.repeat(MAX_BODY)}"}`).subarray(0, MAX_BODY + 1);
  return [
    { what: 'an array body', body: json('[]'), expect: validation },
    { what: 'a string body', body: json('"text"'), expect: validation },
    { what: 'a number body', body: json('42'), expect: validation },
    { what: 'a null body', body: json('null'), expect: validation },
    { what: 'a boolean body', body: json('true'), expect: validation },
    { what: 'an empty body', body: Buffer.alloc(0), expect: validation },
    { what: 'an empty object', body: json('{}'), expect: fixture.validMutationsSucceed ? { kind: 'refusedOrHarmless' } : refused },
    { what: 'only an unexpected field', body: json('{"unexpected":1}'), expect: refused },
    { what: `${NESTING} nested arrays`, body: json(deepArrays(NESTING)), expect: validation },
    { what: `${NESTING} nested objects`, body: json(deepObjects(NESTING)), expect: refused },
    {
      what: '10,000 unknown keys',
      body: json(`{${Array.from({ length: 10_000 }, (_, index) => `"k${index}":${index}`).join(',')}}`),
      expect: refused,
    },
    { what: 'a 200 KB key', body: json(`{${JSON.stringify('k'.repeat(HUGE))}:1}`), expect: refused },
    { what: 'the body in an array', body: json(`[${template}]`), expect: validation },
    { what: 'invalid UTF-8', body: stringWith([0xff, 0xfe]), expect: invalidJson },
    { what: 'an overlong UTF-8 sequence', body: stringWith([0xc0, 0xaf]), expect: invalidJson },
    { what: 'a UTF-8 encoded surrogate', body: stringWith([0xed, 0xa0, 0x80]), expect: invalidJson },
    { what: 'a byte order mark', body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json(template)]), expect: invalidJson },
    { what: 'trailing garbage', body: json(`${template} x`), expect: invalidJson },
    { what: 'two JSON values', body: json(template + template), expect: invalidJson },
    { what: 'a NUL after the JSON', body: json(`${template}\u0000`), expect: invalidJson },
    { what: 'truncated JSON', body: json(template.slice(0, -1)), expect: invalidJson },
    { what: 'JavaScript, not JSON', body: json(`{'${firstKey}': 1,}`), expect: invalidJson },
    { what: 'NaN', body: json(`{${JSON.stringify(firstKey)}:NaN}`), expect: invalidJson },
    { what: 'a comment', body: json(`/* fuzz */${template}`), expect: invalidJson },
    {
      what: 'a gzip-encoded body',
      body: gzipSync(template),
      headers: { 'content-encoding': 'gzip' },
      expect: fixture.anyContentType ? refused : code('UNSUPPORTED_MEDIA_TYPE'),
    },
    { what: 'just over the limit, declared', body: overLimit, expect: code('PAYLOAD_TOO_LARGE') },
    { what: 'just over the limit, chunked', body: overLimit, chunked: true, expect: code('PAYLOAD_TOO_LARGE') },
  ];
}

/** Mutations of the route's body, field by field and object by object. */
function bodyMutationCases(body: Json, fixture: RouteFixture): { what: string; body: Buffer; expect: Expect }[] {
  const mayPass: Expect = fixture.validMutationsSucceed ? { kind: 'refusedOrHarmless' } : refused;
  const cases: { what: string; body: Buffer; expect: Expect }[] = [];
  for (const path of memberPaths(body)) {
    const where = path.join('.');
    cases.push({ what: `${where} removed`, body: json(rewrite(body, path, () => undefined)), expect: mayPass });
    for (const [name, value, expected] of HOSTILE_VALUES) {
      cases.push({ what: `${where} = ${name}`, body: json(rewrite(body, path, value)), expect: expected ? code(expected) : mayPass });
    }
  }
  for (const path of objectPaths(body)) {
    const where = path.length === 0 ? 'the body' : path.join('.');
    const object = valueAt(body, path);
    const firstKey = Object.keys(object as object)[0]!;
    const firstValue = JSON.stringify((object as Record<string, Json>)[firstKey]);
    const add = (members: string) => json(rewrite(body, path, (original) => withLeadingMembers(original, members)));
    cases.push(
      { what: `${where} + an unexpected field`, body: add('"unexpected":1'), expect: mayPass },
      { what: `${where} + __proto__`, body: add('"__proto__":{"polluted":true}'), expect: code('VALIDATION_ERROR') },
      {
        what: `${where} + constructor.prototype`,
        body: add('"constructor":{"prototype":{"polluted":true}}'),
        expect: code('VALIDATION_ERROR'),
      },
      { what: `${where} + constructor`, body: add('"constructor":{"name":"Object"}'), expect: mayPass },
      // The hostile copy first: JSON.parse keeps the last, which is the template's own value.
      { what: `${where}: ${firstKey} twice`, body: add(`${JSON.stringify(firstKey)}:"first"`), expect: code('INVALID_JSON') },
      {
        what: `${where}: ${firstKey} twice, once escaped`,
        body: add(`${escapedKey(firstKey)}:${firstValue}`),
        expect: code('INVALID_JSON'),
      },
    );
  }
  return cases;
}

/** Requests with bodies in other media types than JSON, or none declared. */
function contentTypeCases(fixture: RouteFixture): { what: string; body: Buffer; contentType?: string; expect: Expect }[] {
  const template = json(JSON.stringify(fixture.body ?? {}));
  const unsupported = fixture.anyContentType ? refused : code('UNSUPPORTED_MEDIA_TYPE');
  return [
    { what: 'text/plain', body: template, contentType: 'text/plain', expect: unsupported },
    { what: 'a form', body: json('email=a%40b&password=x'), contentType: 'application/x-www-form-urlencoded', expect: unsupported },
    { what: 'multipart', body: json('--x\r\n\r\n{}\r\n--x--'), contentType: 'multipart/form-data; boundary=x', expect: unsupported },
    { what: 'application/xml', body: json('<a/>'), contentType: 'application/xml', expect: unsupported },
    { what: 'application/json-patch+json', body: template, contentType: 'application/json-patch+json', expect: unsupported },
    { what: 'a JSON-like name', body: template, contentType: 'application/jsonx', expect: unsupported },
    { what: 'no Content-Type', body: template, expect: unsupported },
  ];
}

/** Values for one path parameter; the others keep their fixture values. */
const PATH_VALUES: [string, string][] = [
  ['..', '..'],
  ['.', '.'],
  ['%2E%2E', '%2E%2E'],
  ['encoded traversal', '%2e%2e%2F%2e%2e%2Fetc%2Fpasswd'],
  ['..%2F', '..%2F..%2Fusers.json'],
  ['%2F inside', 'a%2Fb'],
  ['%2F alone', '%2F'],
  ['%00', '%00'],
  ['%00 after a valid value', 'fuzz%00'],
  ['%ZZ', '%ZZ'],
  ['a lone %', '%'],
  ['a cut escape', '%E0%A4%A'],
  ['%FF (not UTF-8)', '%FF%FE'],
  ['unicode', '%C3%A9%F0%9F%91%8D'],
  ['a space', '%20'],
  ['__proto__', '__proto__'],
  ['constructor', 'constructor'],
  ['toString', 'toString'],
  ['hasownproperty', 'hasownproperty'],
  ['10 KB', 'a'.repeat(LONG_PARAM)],
  ['10 KB of escapes', '%61'.repeat(LONG_PARAM / 3)],
  ['an empty segment', ''],
];

/** Node's parser refuses these itself: server.ts answers them. */
const PARSER_PATH_VALUES: [string, string][] = [
  ['a raw non-ASCII byte', 'caf\u00e9'],
  ['a 100 KB value', 'a'.repeat(100 * 1024)],
];

function queryCases(query: Record<string, 'int' | 'text'>, readOnly: boolean): { what: string; query: string; expect: Expect }[] {
  const harmless: Expect = readOnly ? { kind: 'refusedOrHarmless' } : refused;
  const cases: { what: string; query: string; expect: Expect }[] = [];
  for (const [name, kind] of Object.entries(query)) {
    cases.push({ what: `${name} repeated`, query: `${name}=1&${name}=2`, expect: code('VALIDATION_ERROR') });
    const values =
      kind === 'int'
        ? ['abc', '-1', '1.5', '99999999999', '0x10', '1e3', '%201', '1%00']
        : ['a'.repeat(LONG_PARAM), '%00', '%ZZ', '%C3%A9%F0%9F%91%8D', '__proto__', ''];
    for (const value of values) {
      const expect = kind === 'int' ? code('VALIDATION_ERROR') : harmless;
      cases.push({ what: `${name}=${value.slice(0, 20)}`, query: `${name}=${value}`, expect });
    }
    cases.push({ what: `${name}[]`, query: `${name}[]=1`, expect: harmless });
  }
  const junk = ['__proto__[x]=1', '__proto__=1', 'constructor[prototype][x]=1', 'constructor=1', 'unexpected=1', '&&&=&', '%ZZ=1', '=1'];
  for (const query of [...junk, `${'k'.repeat(LONG_PARAM)}=1`]) cases.push({ what: query.slice(0, 30), query, expect: harmless });
  return cases;
}

function generateCases(routes: string[]): Case[] {
  const cases: Case[] = [];
  for (const route of routes) {
    const fixture = ROUTES[route]!;
    const [method, pattern] = route.split(' ') as [string, string];
    const readOnly = method === 'GET';
    const path = pathOf(pattern, fixture.params ?? {});
    const bodyHeaders = { 'content-type': 'application/json' };
    const baselineBody = fixture.body === undefined ? undefined : json(JSON.stringify(fixture.body));

    for (const identity of IDENTITIES) {
      const add = (what: string, request: Omit<RawRequest, 'method'>, gated: boolean, expect: Expect) => {
        const tooLarge = fixture.maxBody !== undefined && (request.body?.length ?? 0) > fixture.maxBody;
        cases.push({
          route,
          identity,
          what,
          request: { method, ...request, headers: { ...fixture.headers, ...request.headers } },
          gated,
          expect: tooLarge ? code('PAYLOAD_TOO_LARGE') : expect,
        });
      };
      const sendsJsonBodies = !(fixture.endsTheSession && identity !== 'anonymous');

      if (sendsJsonBodies) {
        for (const variant of wholeBodyCases(fixture)) {
          const expect = fixture.body === undefined ? { kind: 'baseline' as const } : variant.expect;
          const headers = { ...bodyHeaders, ...variant.headers };
          add(variant.what, { path, headers, body: variant.body, chunked: variant.chunked }, true, expect);
        }
        if (fixture.body !== undefined) {
          for (const variant of bodyMutationCases(fixture.body, fixture)) {
            add(variant.what, { path, headers: bodyHeaders, body: variant.body }, true, variant.expect);
          }
        }
      }
      for (const variant of contentTypeCases(fixture)) {
        const headers: Record<string, string> = variant.contentType ? { 'content-type': variant.contentType } : {};
        add(`content type: ${variant.what}`, { path, headers, body: variant.body }, true, variant.expect);
      }
      if (fixture.query) {
        for (const variant of queryCases(fixture.query, readOnly)) {
          const request = { path: `${path}?${variant.query}`, headers: bodyHeaders, body: baselineBody };
          add(`query ${variant.what}`, request, true, variant.expect);
        }
      }
      for (const name of Object.keys(fixture.params ?? {})) {
        const freeText = fixture.freeTextParams?.includes(name) ?? false;
        for (const [what, value] of PATH_VALUES) {
          const hostilePath = pathOf(pattern, { ...fixture.params, [name]: value });
          // An empty last segment names the collection above it: GET /api/workspaces/ is the listing.
          const namesParent = value === '' && pattern.endsWith(`:${name}`);
          const expect: Expect = readOnly && (freeText || namesParent) ? { kind: 'refusedOrHarmless' } : refused;
          add(`:${name} = ${what}`, { path: hostilePath, headers: bodyHeaders, body: baselineBody }, false, expect);
        }
        for (const [what, value] of PARSER_PATH_VALUES) {
          const hostilePath = pathOf(pattern, { ...fixture.params, [name]: value });
          add(`:${name} = ${what}`, { path: hostilePath, headers: bodyHeaders, body: baselineBody }, false, { kind: 'parser' });
        }
      }
    }
  }
  return cases;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

/** Methods a path does not serve: 405 before authentication. An unknown method is Node's parser's to refuse. */
function methodCases(routes: string[]): Case[] {
  const methodsByPattern = new Map<string, string[]>();
  for (const route of routes) {
    const [method, pattern] = route.split(' ') as [string, string];
    methodsByPattern.set(pattern, [...(methodsByPattern.get(pattern) ?? []), method]);
  }
  const cases: Case[] = [];
  for (const [pattern, served] of methodsByPattern) {
    const path = pathOf(pattern, ROUTES[`${served[0]} ${pattern}`]!.params ?? {});
    for (const identity of IDENTITIES) {
      const add = (method: string, what: string, expect: Expect) =>
        cases.push({ route: `${method} ${pattern}`, identity, what, request: { method, path, headers: {} }, gated: false, expect });
      for (const method of METHODS.filter((candidate) => !served.includes(candidate))) {
        add(method, 'a method the path does not serve', code('METHOD_NOT_ALLOWED'));
      }
      add('FUZZ', 'an unknown method', { kind: 'parser' });
    }
  }
  return cases;
}

/** What is wrong with an answer, or null. */
function judge(fuzz: Case, answer: RawAnswer, gate: Answer | null, baseline: Answer | undefined, dataDir: string): string | null {
  const { expect } = fuzz;
  const { status, text } = answer;
  if (status >= 500) return `a ${status}`;
  // A HEAD answer never has a body: its status is all there is to judge.
  if (fuzz.request.method === 'HEAD') {
    const expected = expect.kind === 'code' ? CLIENT_ERROR_STATUS[expect.code] : undefined;
    return status === expected && text === '' ? null : `expected ${expected} without a body, got ${status}`;
  }
  const success = status >= 200 && status < 300;
  if (!success && (status < 400 || status >= 500)) return `status ${status}`;
  if (status === 204) return text === '' ? null : 'a 204 with a body';

  if (expect.kind === 'parser' && text === '') return status >= 400 ? null : `status ${status}`;
  let envelope: Record<string, unknown>;
  try {
    envelope = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return `not JSON: ${text.slice(0, 100)}`;
  }
  if (Object.keys(envelope).join() !== 'code,message,data,meta,timestamp') return `not the envelope: ${text.slice(0, 200)}`;
  if (!/^application\/json\b/.test(answer.contentType ?? '')) return `content type ${answer.contentType}`;
  if (typeof envelope.timestamp !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(envelope.timestamp)) {
    return `timestamp ${String(envelope.timestamp)}`;
  }
  if (success) {
    if (envelope.code !== 'SUCCESS') return `a ${status} with code ${String(envelope.code)}`;
  } else {
    if (typeof envelope.message !== 'string' || envelope.data !== null) return `an error without a message, or with data: ${text.slice(0, 99)}`;
    if (LEAK.test(text) || text.includes(dataDir)) return `leaks an internal detail: ${text.slice(0, 300)}`;
    if (text.length > MAX_ERROR_ANSWER) return `an error answer of ${text.length} characters: the input is echoed`;
    if (expect.kind !== 'parser' && CLIENT_ERROR_STATUS[String(envelope.code)] !== status) {
      return `code ${String(envelope.code)} with status ${status}`;
    }
  }

  const got = `${status} ${String(envelope.code)}`;
  const answers = (expected: Answer) => status === expected.status && envelope.code === expected.code;
  if (gate) return answers(gate) ? null : `expected the gate's ${gate.status} ${gate.code}, got ${got}`;
  switch (expect.kind) {
    case 'code':
      return envelope.code === expect.code ? null : `expected ${expect.code}, got ${got}: ${String(envelope.message)}`;
    case 'baseline':
      if (!baseline) return 'no baseline to compare with';
      return answers(baseline) ? null : `expected ${baseline.status} ${baseline.code}, got ${got}`;
    case 'refusedOrHarmless':
      return null;
    case 'refused':
    case 'parser':
      return success ? `accepted: ${got}` : null;
  }
}

let t: TestDaemon;

test.before(async () => {
  t = await startTestDaemon({ maxBodyBytes: MAX_BODY });
});
test.after(async () => {
  await t.destroy();
});

test('every route refuses hostile input with a 4xx envelope and changes nothing', async () => {
  const served = buildRoutes(t.daemon.services, t.daemon.config)
    .list()
    .filter((route) => !NOT_ENVELOPE_ROUTES[route]);
  assert.equal(served.filter((route) => !ROUTES[route]), [], 'served routes without a fuzz fixture');
  assert.equal(Object.keys(ROUTES).filter((route) => !served.includes(route)), [], 'fuzz fixtures of routes no longer served');

  // The targets that the fixtures name.
  const admin = await t.admin();
  const user = await createUser(t, 'fuzz-user@example.test');
  await workspaceWith(admin, WORKSPACE, EXTENSION);
  assert.is((await admin.put(`/api/admin/workspaces/${WORKSPACE}/members/${user.id}`)).status, 200);
  for (const caller of [admin, user]) {
    for (let made = 0; made < MAX_TOKENS_PER_USER; made += 1) assert.is((await caller.post('/api/auth/tokens', { name: 'kept', scopes: ['events:read'] })).status, 201);
  }
  await publishExtension(admin, WEBHOOK_EXTENSION);
  await configureExtension(admin, WEBHOOK_EXTENSION, [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.header', 'STRING', 'x-fuzz-key'],
    ['webhook.secret', 'SECRET', 'fuzz-webhook-key'],
    ['webhook.workspaceId', 'STRING', WORKSPACE],
  ]);
  const notice = await user.post(`/api/workspaces/${WORKSPACE}/events/publish`, {
    eventKey: 'platform.notification',
    payload: { channel: 'fuzz', message: 'hello' },
  });
  assert.is(notice.status, 200, notice.text);

  const client = rawClient(t.url);
  const tokens: Record<Identity, string | null> = { anonymous: null, user: user.token, admin: admin.token };
  const withToken = (request: RawRequest, identity: Identity): RawRequest => {
    const token = tokens[identity];
    return token ? { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } } : request;
  };
  const failures: string[] = [];
  let before = await settledSnapshot(t.dataDir);
  /** Sends one request and returns its answer and whether any file changed meanwhile. */
  const run = async (request: RawRequest, identity: Identity) => {
    const answer = await client.send(withToken(request, identity));
    // Writes reach the disk before the answer is sent, so comparing now is enough.
    const after = snapshotDataDir(t.dataDir);
    // The webhook request log records every call of an existing extension, refused ones too, after the answer.
    const changed = changedFiles(before, after).filter((file) => file !== 'webhook-requests.log');
    before = after;
    return { answer, changed };
  };

  try {
    // Baselines: each fixture is refused (or read) for the reason the table gives, and reaches validation:
    // with an unexpected field added, the only issue is that field.
    const baselines = new Map<string, Answer>();
    for (const route of served) {
      const fixture = ROUTES[route]!;
      const [method, pattern] = route.split(' ') as [string, string];
      const path = pathOf(pattern, fixture.params ?? {});
      for (const identity of IDENTITIES) {
        const gate = gateOf(fixture, identity);
        if (fixture.endsTheSession && !gate) {
          baselines.set(`${route} ${identity}`, { status: 200, code: 'SUCCESS' });
          continue;
        }
        const body = fixture.body === undefined ? undefined : json(JSON.stringify(fixture.body));
        const request: RawRequest = { method, path, headers: { 'content-type': 'application/json', ...fixture.headers }, body };
        const { answer, changed } = await run(request, identity);
        const envelope = answer.text ? (JSON.parse(answer.text) as { code: string }) : null;
        const label = `${route} as ${identity}: ${answer.status} ${answer.text.slice(0, 200)}`;
        assert.ok(gate ? answer.status === gate.status : fixture.baseline.includes(answer.status), `baseline of ${label}`);
        assert.equal(changed, [], `the baseline of ${route} as ${identity} changed files`);
        baselines.set(`${route} ${identity}`, { status: answer.status, code: envelope?.code ?? null });

        if (fixture.body !== undefined && !gate && !fixture.anyContentType) {
          const extra = json(withLeadingMembers(fixture.body, '"unexpected":1'));
          const probe = await run({ ...request, body: extra }, identity);
          const issues = (JSON.parse(probe.answer.text) as { meta: { issues?: { path: string }[] } | null }).meta?.issues ?? [];
          const paths = issues.map((issue) => issue.path);
          assert.equal(paths, ['unexpected'], `the fixture of ${route} is not valid: ${probe.answer.text}`);
          assert.equal(probe.changed, [], `${route} with an unexpected field changed files`);
        }
      }
    }

    const cases = [...generateCases(served), ...methodCases(served)];
    for (const fuzz of cases) {
      const label = `${fuzz.route} as ${fuzz.identity}, ${fuzz.what}`;
      let outcome: Awaited<ReturnType<typeof run>>;
      try {
        outcome = await run(fuzz.request, fuzz.identity);
      } catch (error) {
        failures.push(`${label}: no answer (${(error as Error).message})`);
        before = snapshotDataDir(t.dataDir);
        continue;
      }
      if (outcome.changed.length > 0) failures.push(`${label}: changed ${outcome.changed.join(', ')}`);
      const gate = fuzz.gated ? gateOf(ROUTES[fuzz.route]!, fuzz.identity) : null;
      const problem = judge(fuzz, outcome.answer, gate, baselines.get(`${fuzz.route} ${fuzz.identity}`), t.dataDir);
      if (problem) failures.push(`${label}: ${problem}`);
    }

    console.log(`  (fuzz: ${cases.length} cases over ${served.length} routes, ${failures.length} failed)`);
    assert.ok(cases.length >= 1000, `${cases.length} cases`);
    assert.equal(failures.slice(0, 40), [], `${failures.length} failures; the first 40 are listed`);
  } finally {
    client.close();
  }

  // Still serving, and still letting people in.
  assert.is((await t.anon.get('/api/health')).status, 200);
  const login = await t.anon.post('/api/auth/login', { email: ADMIN.email, password: ADMIN.password });
  assert.is(login.status, 200, login.text);
  assert.is((await user.get('/api/auth/me')).status, 200, 'the USER session survived the pass');
  assert.is((await admin.get('/api/auth/me')).status, 200, 'the ADMIN session survived the pass');
});

test('only what JSON.parse would hide is refused: duplicate keys, __proto__, numbers beyond a double', async () => {
  const admin = await t.admin();
  const publish = (raw: string) =>
    call(t.url, 'POST', `/api/workspaces/${WORKSPACE}/events/publish`, {
      raw,
      token: admin.token,
      headers: { 'content-type': 'application/json' },
    });
  const refusal = ({ status, body }: HttpResult) => {
    const { requestId, ...meta } = body.meta ?? {};
    assert.type(requestId, 'string');
    return `${status} ${body.code} ${body.message} ${JSON.stringify(Object.keys(meta).length > 0 ? meta : null)}`;
  };

  const duplicate = await publish('{"eventKey":"fuzz.happened","payload":{"amount":1,"am\\u006funt":2}}');
  assert.is(refusal(duplicate), '400 INVALID_JSON duplicate key "amount" in an object at payload null');
  const proto = await publish('{"eventKey":"fuzz.happened","payload":{"items":[{"__proto__":{"isAdmin":true}}]}}');
  assert.is(proto.status, 400, proto.text);
  assert.equal(proto.body.meta.issues, [{ path: 'payload.items.0.__proto__', message: 'the key "__proto__" is not accepted' }]);
  const poisoned = await publish('{"eventKey":"fuzz.happened","payload":{"constructor":{"prototype":{"isAdmin":true}}}}');
  assert.is(poisoned.status, 400, poisoned.text);
  assert.is(poisoned.body.meta.issues[0].path, 'payload.constructor.prototype');
  const infinite = await publish('{"eventKey":"fuzz.happened","payload":{"amount":-1e999}}');
  assert.is(infinite.status, 400, infinite.text);
  assert.equal(infinite.body.meta.issues, [{ path: 'payload.amount', message: 'the number -1e999 is beyond the range of a double' }]);

  // The same key in sibling objects, a plain "constructor" field and the largest double are data.
  const payload = { constructor: 'Acme', amount: 1.7976931348623157e308, lines: [{ sku: 'a' }, { sku: 'a' }] };
  const accepted = await publish(JSON.stringify({ eventKey: 'fuzz.accepted', payload }));
  assert.is(accepted.status, 200, accepted.text);
  const recorded = await admin.get(`/api/workspaces/${WORKSPACE}/events?eventKey=fuzz.accepted`);
  assert.equal(recorded.body.data.map((event: { payload: unknown }) => event.payload), [payload]);
});

/**
 * 2^levels distinct keys with one hash: each level appends one of two blocks
 * of three characters that take a key to the same hash state. The hash is the
 * scan's own; the blocks are found by a birthday search.
 */
function keysSharingOneHash(levels: number): string[] {
  let keys = [''];
  for (let level = 0; level < levels; level += 1) {
    const prefix = keys[0]!;
    const blockByHash = new Map<number, string>();
    let pair: [string, string] | undefined;
    while (!pair) {
      const block = String.fromCharCode(...Array.from({ length: 3 }, () => 0x4e00 + Math.floor(Math.random() * 0x5000)));
      const hash = keyHash(prefix + block);
      const other = blockByHash.get(hash);
      if (other !== undefined && other !== block) pair = [other, block];
      blockByHash.set(hash, block);
    }
    keys = keys.flatMap((key) => [key + pair[0], key + pair[1]]);
  }
  return keys;
}

test('a duplicate key is found among 1,024 keys made to share one hash', async () => {
  const keys = keysSharingOneHash(10);
  assert.is(new Set(keys.map(keyHash)).size, 1);
  const members = keys.map((key, index) => `${JSON.stringify(key)}:${index}`);
  const send = (body: string) =>
    call(t.url, 'POST', `/api/webhooks/${WEBHOOK_EXTENSION}`, { raw: body, headers: { 'content-type': 'application/json' } });
  // Distinct keys: read as a JSON object, then refused for the missing API key.
  assert.is((await send(`{${members.join(',')}}`)).body.code, 'WEBHOOK_REJECTED');
  const repeated = await send(`{${members.join(',')},${JSON.stringify(keys[700])}:0}`);
  assert.is(repeated.body.code, 'INVALID_JSON', repeated.text);
});

test.run();
