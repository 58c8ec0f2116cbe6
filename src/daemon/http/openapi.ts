import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig, type JsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { namedResources } from '../../contract/resources.js';
import { successShapes } from '../../contract/responses.js';
import type { ErrorCode } from '../errors.js';
import { PLATFORM_VERSION } from '../version.js';
import { statusOf } from './envelope.js';
import { specOf, type AnyEndpointSpec } from './endpoint.js';
import type { RouteTable } from './routes.js';

type Json = Record<string, unknown>;

/**
 * Request schemas as JSON Schema. The 'output' mode starts each pipeline at
 * its last schema: jsonObject()'s plain-object check is piped into the strict
 * object that names the fields, and that object is what a client must send.
 * Transforms and custom checks have no JSON Schema form: they are left out
 * (errorMode 'ignore'), so the document is looser than the validation, never stricter.
 */
const CONVERSION: ConversionConfig = { target: 'draft-2020-12', typeMode: 'output', errorMode: 'ignore' };

const schemaOf = (schema: v.GenericSchema): Json => {
  const { $schema: _, ...rest } = toJsonSchema(schema, CONVERSION) as JsonSchema & Json;
  return rest;
};

/** Answers refer to the contract's named resources in components.schemas rather than repeating them. */
const RESOURCE_CONVERSION: ConversionConfig = {
  ...CONVERSION,
  errorMode: 'throw',
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
};

const answerSchemaOf = (schema: v.GenericSchema): Json => {
  const { $schema: _, $defs: __, ...rest } = toJsonSchema(schema, { ...RESOURCE_CONVERSION, definitions: namedResources }) as JsonSchema & Json;
  return rest;
};

const ENVELOPE: Json = {
  type: 'object',
  required: ['code', 'message', 'data', 'meta', 'timestamp'],
  properties: {
    code: { type: 'string' },
    message: { type: ['string', 'null'] },
    data: {},
    meta: { type: ['object', 'null'] },
    timestamp: { type: 'string', format: 'date-time' },
  },
};

/** The shared envelope, with the codes this answer can carry (2020-12 allows keywords beside $ref). */
const envelopeWith = (code: Json): Json => ({ $ref: '#/components/schemas/Envelope', properties: { code } });

/**
 * The success envelope of a route, with its `data` and `meta` from the
 * contract (src/contract/responses.ts). Written out rather than as the shared
 * envelope plus keywords: references inside keywords beside a $ref trip some
 * OpenAPI tools (the validator of test/openapi.test.ts among them).
 */
function successEnvelopeOf(method: string, path: string): Json {
  const shape = successShapes[`${method.toUpperCase()} ${path}`];
  if (!shape) throw new Error(`route ${method.toUpperCase()} ${path} has no success shape in src/contract/responses.ts: it cannot be documented`);
  return {
    type: 'object',
    required: ['code', 'message', 'data', 'meta', 'timestamp'],
    additionalProperties: false,
    properties: {
      code: { const: 'SUCCESS' },
      message: { type: 'null' },
      data: answerSchemaOf(shape.data),
      meta: answerSchemaOf(shape.meta),
      timestamp: { type: 'string', format: 'date-time' },
    },
  };
}

const errorAnswer = (codes: ErrorCode[]): Json => ({
  description: codes.join(', '),
  content: { 'application/json': { schema: envelopeWith({ enum: codes }) } },
});

/** The error codes a route can answer with, from what its spec says it checks. */
function errorCodesOf(spec: AnyEndpointSpec, method: string, path: string): ErrorCode[] {
  const codes: ErrorCode[] = ['INTERNAL_ERROR', 'UNAVAILABLE', 'MISDIRECTED_REQUEST', 'METHOD_NOT_ALLOWED'];
  if (spec.access !== 'public') codes.push('UNAUTHORIZED', 'ACCOUNT_DISABLED');
  if (spec.access === 'admin' || spec.authorize || method !== 'get') codes.push('FORBIDDEN');
  if (spec.params || spec.query || spec.body) codes.push('VALIDATION_ERROR');
  if (spec.body) codes.push('INVALID_JSON', 'PAYLOAD_TOO_LARGE');
  if (!spec.readsOwnBody) codes.push('UNSUPPORTED_MEDIA_TYPE');
  if (path.includes('{')) codes.push('NOT_FOUND');
  if (method !== 'get') codes.push('CONFLICT');
  if (path.startsWith('/api/auth/')) codes.push('INVALID_CREDENTIALS', 'RATE_LIMITED');
  if (path.startsWith('/api/webhooks/')) codes.push('PAYLOAD_TOO_LARGE', 'WEBHOOK_REJECTED', 'WEBHOOK_FAILED');
  if (path.endsWith('/extensions') && path.startsWith('/api/workspaces/')) codes.push('VERSION_YANKED', 'INCOMPATIBLE_VERSION');
  if (path.endsWith('/stream')) codes.push('RATE_LIMITED');
  return [...new Set(codes)];
}

function parametersOf(spec: AnyEndpointSpec): Json[] {
  const parameters: Json[] = [];
  for (const [where, schema] of [['path', spec.params], ['query', spec.query]] as const) {
    if (!schema) continue;
    const json = schemaOf(schema);
    const properties = (json.properties ?? {}) as Record<string, Json>;
    const required = new Set((json.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      parameters.push({ name, in: where, required: where === 'path' || required.has(name), schema: property });
    }
  }
  return parameters;
}

function operationOf(method: string, routePath: string, path: string, spec: AnyEndpointSpec): Json {
  const status = String(spec.status ?? 200);
  const success: Json =
    status === '204'
      ? { description: 'done; no body' }
      : spec.answers
        ? { description: spec.answers.description, content: { [spec.answers.contentType]: { schema: {} } } }
        : { description: 'the envelope', content: { 'application/json': { schema: successEnvelopeOf(method, routePath) } } };
  if (spec.readsOwnBody && success.content) {
    // A provider's handshake (Slack's url_verification) is answered with the challenge as plain text.
    (success.content as Json)['text/plain'] = { schema: { type: 'string' } };
  }
  const responses: Json = { [status]: success };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(spec, method, path).sort()) {
    const status = statusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) responses[String(status)] = errorAnswer(codes);

  const operation: Json = {
    operationId: `${method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    tags: [path.split('/')[path.startsWith('/api/admin/') ? 3 : 2] ?? 'api'],
    parameters: parametersOf(spec),
    responses,
  };
  if (spec.access === 'public') operation.security = [];
  else if (spec.access === 'admin') operation.description = 'ADMIN only.';
  if (spec.body) {
    operation.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(spec.body) } } };
  } else if (spec.readsOwnBody) {
    operation.requestBody = {
      description: "the provider's request as sent: any content type, passed to the extension's webhook handler",
      content: { '*/*': { schema: {} } },
    };
  }
  return operation;
}

/**
 * The OpenAPI 3.1 document of every route in the table, from the endpoint
 * specs that validate the requests; `sessionCookie` is the cookie's name as
 * this daemon sets it.
 */
export function openApiDocument(routes: RouteTable, sessionCookie: string): Json {
  const paths: Record<string, Json> = {};
  for (const { method, path, handler } of routes.entries()) {
    const spec = specOf(handler);
    if (!spec) throw new Error(`route ${method.toUpperCase()} ${path} is not an endpoint(): it cannot be documented`);
    const openApiPath = path.replace(/:(\w+)/g, '{$1}');
    (paths[openApiPath] ??= {})[method] = operationOf(method, path, openApiPath, spec);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'platform',
      version: PLATFORM_VERSION,
      description:
        'Every answer with a body is the envelope {code, message, data, meta, timestamp}. Request parameters and bodies are generated from the schemas that validate them, success `data` and `meta` from the API contract (src/contract); docs/api.md is the guide.',
    },
    components: {
      schemas: { Envelope: ENVELOPE, ...toJsonSchemaDefs(namedResources, RESOURCE_CONVERSION) },
      securitySchemes: {
        cookie: { type: 'apiKey', in: 'cookie', name: sessionCookie },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
    security: [{ cookie: [] }, { bearer: [] }],
    paths,
  };
}
