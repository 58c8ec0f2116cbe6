import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig, type JsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { endpoints, errorCodesOf, TAGS, type EndpointDeclaration } from '../../contract/endpoints.js';
import { statusOf, type ErrorCode } from '../../contract/errors.js';
import { MANIFEST_JSON_SCHEMA } from '../../contract/manifest.js';
import { namedResources } from '../../contract/resources.js';
import { PLATFORM_VERSION } from '../version.js';

type Json = Record<string, unknown>;

/** How a schema says the document shows it (QueryInt: an integer with bounds, which a client sends as digits). */
const documentedAs = (action: { type: string; metadata?: { documentedAs?: Json } }): Json | undefined =>
  action.type === 'metadata' ? action.metadata?.documentedAs : undefined;

/**
 * Request schemas as JSON Schema. The 'output' mode starts each pipeline at
 * its last schema: jsonObject()'s plain-object check is piped into the strict
 * object that names the fields, and that object is what a client must send.
 * Transforms and custom checks have no JSON Schema form: they are left out
 * (errorMode 'ignore'), so the document is looser than the validation, never stricter.
 */
const CONVERSION: ConversionConfig = {
  target: 'draft-2020-12',
  typeMode: 'output',
  errorMode: 'ignore',
  overrideAction: ({ valibotAction }) => documentedAs(valibotAction as never),
};

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

/** The manifest's own JSON Schema (served at its own URL too), as a component: without the keywords of a standalone document. */
function manifestComponent(): Json {
  const { $schema: _, $id: __, ...component } = MANIFEST_JSON_SCHEMA;
  return component as Json;
}

const TIMESTAMP = { type: 'string', format: 'date-time' };

/** The success envelope of an operation, with its `data` and `meta`. */
const successEnvelopeOf = (declaration: EndpointDeclaration): Json => ({
  type: 'object',
  required: ['code', 'message', 'data', 'meta', 'timestamp'],
  additionalProperties: false,
  properties: {
    code: { const: 'SUCCESS' },
    message: { type: 'null' },
    data: declaration.data ? answerSchemaOf(declaration.data) : { type: 'null' },
    meta: declaration.meta ? answerSchemaOf(declaration.meta) : { type: 'null' },
    timestamp: TIMESTAMP,
  },
});

/** An error envelope with the codes it can carry, written out: generators drop keywords beside a $ref. */
const errorAnswer = (codes: ErrorCode[]): Json => ({
  description: codes.join(', '),
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['code', 'message', 'data', 'meta', 'timestamp'],
        additionalProperties: false,
        properties: {
          code: { type: 'string', enum: codes },
          message: { type: 'string' },
          data: { type: 'null' },
          meta: { $ref: '#/components/schemas/ErrorMeta' },
          timestamp: TIMESTAMP,
        },
      },
    },
  },
});

/** What a non-envelope answer's body is. */
const NON_ENVELOPE_SCHEMAS: Record<string, Json> = {
  'application/json': { type: 'object' },
  'application/gzip': { type: 'string', format: 'binary' },
  'text/event-stream': {
    type: 'string',
    description: 'Items of `id: <position>`, `event: <type>` and `data: <JSON>` lines, each ended by a blank line: each is a StreamItem (x-stream-item).',
    'x-stream-item': { $ref: '#/components/schemas/StreamItem' },
  },
};

const SESSION_COOKIE_HEADER = (sets: boolean): Json => ({
  'Set-Cookie': {
    description: sets
      ? 'The session: an HttpOnly, SameSite=Lax cookie that the browser sends with every request. Scripts may send its value as `Authorization: Bearer` instead.'
      : 'Clears the session cookie.',
    schema: { type: 'string' },
  },
});

function successOf(declaration: EndpointDeclaration): Json {
  const status = declaration.status ?? 200;
  if (status === 204) return { description: 'Done; no body.' };
  let success: Json;
  if (declaration.answers) {
    const { contentType, description } = declaration.answers;
    const schema = NON_ENVELOPE_SCHEMAS[contentType.split(';')[0]!] ?? { type: 'string' };
    success = { description, content: { [contentType]: { schema } } };
  } else {
    success = { description: 'The envelope.', content: { 'application/json': { schema: successEnvelopeOf(declaration) } } };
  }
  if (declaration.readsOwnBody) {
    // A provider's handshake (Slack's url_verification) is answered with the challenge as plain text.
    (success.content as Json)['text/plain'] = { schema: { type: 'string' } };
  }
  if (declaration.session) success.headers = SESSION_COOKIE_HEADER(declaration.session === 'sets');
  return success;
}

function parametersOf(declaration: EndpointDeclaration): Json[] {
  const parameters: Json[] = [];
  for (const [where, schema] of [['path', declaration.params], ['query', declaration.query]] as const) {
    if (!schema) continue;
    const json = schemaOf(schema);
    const properties = (json.properties ?? {}) as Record<string, Json>;
    const required = new Set((json.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      // A default is written as the query string carries it ("50"); the document shows the integer.
      if (property.type === 'integer' && typeof property.default === 'string') property.default = Number(property.default);
      parameters.push({ name, in: where, required: where === 'path' || required.has(name), schema: property });
    }
  }
  if (declaration.headers) {
    const json = schemaOf(declaration.headers);
    const required = new Set((json.required ?? []) as string[]);
    for (const [name, property] of Object.entries((json.properties ?? {}) as Record<string, Json>)) {
      const { description, ...schema } = property;
      parameters.push({ name, in: 'header', required: required.has(name), ...(description === undefined ? {} : { description }), schema });
    }
  }
  if (declaration.resumable) {
    parameters.push({
      name: 'Last-Event-ID',
      in: 'header',
      required: false,
      description: 'The `id` of the last item received: the stream resumes after it (browsers send it when they reconnect).',
      schema: { type: 'string' },
    });
  }
  return parameters;
}

const SECURITY: Record<EndpointDeclaration['access'], Json[]> = {
  public: [],
  user: [{ cookie: [] }, { bearer: [] }],
  member: [{ cookie: [] }, { bearer: [] }],
  admin: [{ cookie: [] }, { bearer: [] }],
  scraper: [{ metricsToken: [] }, { cookie: [] }, { bearer: [] }],
  installation: [{ installationToken: [] }],
};

const ACCESS_NOTE: Record<EndpointDeclaration['access'], string> = {
  public: 'Anyone may call.',
  user: 'Any logged-in user.',
  member: 'Members of the workspace and ADMINs.',
  admin: 'ADMIN only.',
  scraper: 'The metrics token (`PLATFORM_METRICS_TOKEN`) or an ADMIN.',
  installation: 'An extension’s own service, with its installation token.',
};

/**
 * How an operation may be called: the access's schemes, a personal API token
 * with the operation's scope (OpenAPI 3.1 lets a non-OAuth requirement list
 * roles: here, the scope), and an installation token where one may call.
 */
function securityOf(declaration: EndpointDeclaration): Json[] {
  const { scope } = declaration;
  return [
    ...SECURITY[declaration.access],
    ...(scope === undefined || declaration.access === 'public' ? [] : [{ apiToken: scope === 'any' ? [] : [scope] }]),
    ...(declaration.forInstallations ? [{ installationToken: [] }] : []),
  ];
}

function operationOf(operationId: string, declaration: EndpointDeclaration): Json {
  const responses: Json = { [String(declaration.status ?? 200)]: successOf(declaration) };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(declaration)) {
    const status = statusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) responses[String(status)] = errorAnswer(codes);

  const operation: Json = {
    operationId,
    summary: declaration.summary,
    description: ACCESS_NOTE[declaration.access],
    tags: [declaration.tag],
    security: securityOf(declaration),
    ...(declaration.scope === undefined || declaration.access === 'public' ? {} : { 'x-required-scope': declaration.scope }),
    parameters: parametersOf(declaration),
    responses,
  };
  if (declaration.body) {
    operation.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(declaration.body) } } };
  } else if (declaration.readsOwnBody) {
    operation.requestBody = {
      description: "The provider's request as sent: any content type, passed to the extension's webhook handler.",
      content: { '*/*': { schema: {} } },
    };
  }
  return operation;
}

/** The OpenAPI 3.1 document of the endpoint table; `sessionCookie` is the cookie's name as this daemon sets it. */
export function openApiDocument(sessionCookie: string): Json {
  const paths: Record<string, Json> = {};
  for (const [operationId, declaration] of Object.entries(endpoints) as [string, EndpointDeclaration][]) {
    const path = declaration.path.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[declaration.method.toLowerCase()] = operationOf(operationId, declaration);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'platform',
      version: PLATFORM_VERSION,
      description:
        'Every answer with a body is the envelope {code, message, data, meta, timestamp}, except the streams, the metrics, backups and this document. docs/api.md is the guide.',
    },
    servers: [{ url: '/', description: 'This daemon.' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    components: {
      schemas: { ...toJsonSchemaDefs(namedResources, RESOURCE_CONVERSION), ExtensionManifest: manifestComponent() },
      securitySchemes: {
        cookie: { type: 'apiKey', in: 'cookie', name: sessionCookie, description: 'The session cookie that logging in sets.' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'The session token, sent as `Authorization: Bearer`.' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The metrics token (`PLATFORM_METRICS_TOKEN`), for `/metrics` only.' },
        apiToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A personal API token (`plt_…`), acting as its user within its scopes: each operation lists the scope it needs (`x-required-scope` and this requirement’s roles), or none when only a session may call it.',
        },
        installationToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'An extension’s installation token (`pli_…`): its own service publishes its manifest’s events, reads its installation and its own subscriptions’ deliveries.',
        },
      },
    },
    paths,
  };
}
