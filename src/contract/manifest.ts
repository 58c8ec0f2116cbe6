/**
 * An extension version's manifest: what the version declares about itself
 * (the permissions it asks for, the events it publishes with their JSON
 * Schemas, the events it subscribes to, the configuration it reads). This
 * JSON Schema is the manifest's definition: the daemon validates manifests
 * with it and serves it at /api/schemas/extension-manifest.json, and the API
 * document refers to it. Plain data, so that every client can import it.
 */

const SLUG = '^[a-z][a-z0-9-]{1,63}$';
const EVENT_KEY = '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)+$';
const FIELD_NAME = '^[A-Za-z][A-Za-z0-9_.-]{0,127}$';
const SEMVER =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$';

export const MANIFEST_SCHEMA_PATH = '/api/schemas/extension-manifest.json';

export const MANIFEST_JSON_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'urn:platform:schemas:extension-manifest:1',
  title: 'Extension manifest',
  description:
    'What one version of an extension declares: the permissions it asks for at install, the events it publishes (each with a JSON Schema per schemaVersion), the events it subscribes to, and the configuration it reads. Every permission and every published eventKey begins with "<extensionKey>.".',
  type: 'object',
  required: ['manifestVersion', 'extensionKey', 'version'],
  additionalProperties: false,
  properties: {
    manifestVersion: { const: 1, description: 'The version of this manifest format.' },
    extensionKey: { type: 'string', pattern: SLUG, description: 'Equals the key of the extension the version is published for.' },
    version: { type: 'string', pattern: SEMVER, maxLength: 256, description: 'Equals the version being published.' },
    permissions: {
      type: 'array',
      maxItems: 100,
      uniqueItems: true,
      description: 'What an administrator grants at install, each "<extensionKey>.<something>".',
      items: { type: 'string', minLength: 1, maxLength: 200 },
    },
    publishes: {
      type: 'array',
      maxItems: 100,
      description: 'The events the extension publishes; a payload published under one of them is validated against its schema.',
      items: {
        type: 'object',
        required: ['eventKey', 'schemaVersion', 'schema'],
        additionalProperties: false,
        properties: {
          eventKey: { type: 'string', pattern: EVENT_KEY, maxLength: 255 },
          schemaVersion: { type: 'string', minLength: 1, maxLength: 64 },
          description: { type: 'string', maxLength: 2000 },
          schema: { type: ['object', 'boolean'], description: 'A JSON Schema (2020-12) of the payload.' },
        },
      },
    },
    subscribes: {
      type: 'array',
      maxItems: 100,
      description: 'The events the extension receives: one subscription per entry is created at install.',
      items: {
        type: 'object',
        required: ['eventKey', 'kind'],
        additionalProperties: false,
        properties: {
          eventKey: { type: 'string', pattern: EVENT_KEY, maxLength: 255 },
          kind: { enum: ['EXTERNAL_SERVICE', 'IN_PROCESS'] },
          path: {
            type: 'string',
            pattern: '^/[^?#\\s]*$',
            maxLength: 500,
            description: 'EXTERNAL_SERVICE only: appended to the service URL given at install (default /events).',
          },
        },
      },
    },
    configuration: {
      type: 'array',
      maxItems: 200,
      description: 'The configuration fields the extension reads; a required one not yet set is reported by the installation.',
      items: {
        type: 'object',
        required: ['name', 'type'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: FIELD_NAME },
          type: { enum: ['STRING', 'NUMBER', 'BOOLEAN', 'SECRET'] },
          required: { type: 'boolean' },
          description: { type: 'string', maxLength: 2000 },
        },
      },
    },
  },
} as const;

/** A JSON Schema document (2020-12): an object, or true / false. */
export type JsonSchema = Record<string, unknown> | boolean;

export interface PublishedEventType {
  eventKey: string;
  schemaVersion: string;
  description?: string;
  schema: JsonSchema;
}

export interface SubscribedEvent {
  eventKey: string;
  kind: 'EXTERNAL_SERVICE' | 'IN_PROCESS';
  path?: string;
}

export interface ConfigurationField {
  name: string;
  type: 'STRING' | 'NUMBER' | 'BOOLEAN' | 'SECRET';
  required?: boolean;
  description?: string;
}

/** A manifest that passed MANIFEST_JSON_SCHEMA. */
export interface Manifest {
  manifestVersion: 1;
  extensionKey: string;
  version: string;
  permissions?: string[];
  publishes?: PublishedEventType[];
  subscribes?: SubscribedEvent[];
  configuration?: ConfigurationField[];
}

/** Where deliveries of a subscription created from a manifest go, below the service URL given at install. */
export const DEFAULT_SUBSCRIPTION_PATH = '/events';

/**
 * Where an external subscriber receives its deliveries: the service URL
 * without its trailing slashes, then the path (`/events` unless a manifest
 * said otherwise), before any query string (`/hooks/events?key=v`).
 */
export function deliveryUrlOf(serviceBaseUrl: string, path = DEFAULT_SUBSCRIPTION_PATH): string {
  const queryAt = serviceBaseUrl.search(/[?#]/);
  const [base, query] = queryAt === -1 ? [serviceBaseUrl, ''] : [serviceBaseUrl.slice(0, queryAt), serviceBaseUrl.slice(queryAt)];
  return `${base.replace(/\/+$/, '')}${path}${query}`;
}
