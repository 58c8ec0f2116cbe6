import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { EventType, EventTypeDetail } from '../../contract/types.js';
import type { JsonSchema, PublishedEventType } from '../../contract/manifest.js';
import { conflict, invalid, notFound } from '../errors.js';
import { compileSchema, issuesOf, schemaViolation } from './json-schema.js';
import { sameSchema } from './manifest.js';
import type { StoredExtension } from './types.js';

/** An event type the daemon defines itself, whatever the catalog holds. */
export interface BuiltInEventType {
  eventKey: string;
  extensionKey: string;
  description: string;
  schemas: Readonly<Record<string, JsonSchema>>;
}

interface Entry {
  eventKey: string;
  extensionKey: string;
  description: string;
  /** schemaVersion → schema, lowest schemaVersion first. */
  schemas: Map<string, JsonSchema>;
  /** Frozen answers, built on first read after a change. */
  summary: EventType | null;
  detail: EventTypeDetail | null;
}

/** Schema versions are ordered as numbers where they are numbers ("2" < "10"), as text elsewhere. */
const schemaVersionOrder = new Intl.Collator('en', { numeric: true }).compare;

/**
 * The catalog of event types: the built-ins, and every type the manifests of
 * an extension's versions publish (yanked versions too: events of that shape
 * may still arrive). A (eventKey, schemaVersion) keeps the schema it was
 * first published with; the catalog refuses a redefinition (409). Schemas are
 * compiled on first use and kept compiled: a published schema never changes,
 * and only ADMINs publish them.
 */
export class EventTypeCatalog {
  private readonly types = new Map<string, Entry>();
  /** The event keys each extension's manifests declare, to rebuild them when it changes. */
  private readonly declaredBy = new Map<string, string[]>();
  private readonly compiled = new Map<string, ValidateFunction>();
  private listing: EventType[] | null = null;

  constructor(private readonly builtIns: readonly BuiltInEventType[]) {
    for (const type of builtIns) this.types.set(type.eventKey, entryOf(type.eventKey, type.extensionKey, type.description, Object.entries(type.schemas)));
  }

  /** Rebuilds the types an extension's manifests declare, from its versions as stored (newest first). */
  putExtension(extension: StoredExtension): void {
    for (const eventKey of this.declaredBy.get(extension.extensionKey) ?? []) this.types.delete(eventKey);
    const declared = new Map<string, { description: string | undefined; schemas: Array<[string, JsonSchema]> }>();
    for (const { manifest } of extension.versions) {
      for (const published of manifest?.publishes ?? []) {
        if (this.builtIns.some((type) => type.eventKey === published.eventKey)) continue;
        const type = declared.get(published.eventKey) ?? { description: undefined, schemas: [] };
        // Versions are newest first: the first description met is the newest one.
        type.description ??= published.description;
        if (!type.schemas.some(([schemaVersion]) => schemaVersion === published.schemaVersion)) type.schemas.push([published.schemaVersion, published.schema]);
        declared.set(published.eventKey, type);
      }
    }
    for (const [eventKey, type] of declared) this.types.set(eventKey, entryOf(eventKey, extension.extensionKey, type.description ?? '', type.schemas));
    if (declared.size > 0) this.declaredBy.set(extension.extensionKey, [...declared.keys()]);
    else this.declaredBy.delete(extension.extensionKey);
    this.listing = null;
  }

  /** By eventKey. */
  list(): EventType[] {
    this.listing ??= [...this.types.values()].sort((a, b) => (a.eventKey < b.eventKey ? -1 : 1)).map((entry) => summaryOf(entry));
    return this.listing;
  }

  get(eventKey: string): EventTypeDetail {
    const entry = this.types.get(eventKey);
    if (!entry) throw notFound(`event type ${eventKey} not found`);
    entry.detail ??= Object.freeze({ ...summaryOf(entry), schemas: Object.freeze(Object.fromEntries(entry.schemas)) });
    return entry.detail;
  }

  /**
   * 409 when a published type would get another schema for a schemaVersion it
   * has: from a built-in, or from another version of the extension (`current`,
   * as the store holds it now).
   */
  assertNoRedefinition(current: StoredExtension, publishes: readonly PublishedEventType[]): void {
    for (const { eventKey, schemaVersion, schema } of publishes) {
      const builtIn = this.builtIns.find((type) => type.eventKey === eventKey)?.schemas[schemaVersion];
      const published =
        builtIn ??
        current.versions
          .flatMap((version) => version.manifest?.publishes ?? [])
          .find((other) => other.eventKey === eventKey && other.schemaVersion === schemaVersion)?.schema;
      if (published !== undefined && !sameSchema(published, schema)) {
        throw conflict(`schemaVersion ${schemaVersion} of ${eventKey} is published with another schema; a published schema never changes (publish it as a new schemaVersion)`);
      }
    }
  }

  /**
   * Checks a payload against its type: the schemaVersion asked for (400 when
   * the type has no such version), else the highest. Returns the schemaVersion
   * the event is recorded with: the one given for a key without a type.
   * Throws 400 VALIDATION_ERROR with the JSON pointer of each problem.
   */
  check(eventKey: string, schemaVersion: string | undefined, payload: Record<string, unknown>): string | null {
    const entry = this.types.get(eventKey);
    if (!entry) return schemaVersion ?? null;
    const version = schemaVersion ?? [...entry.schemas.keys()].at(-1)!;
    const schema = entry.schemas.get(version);
    if (schema === undefined) {
      throw invalid('schemaVersion', `${eventKey} has no schemaVersion ${version}; it has ${[...entry.schemas.keys()].join(', ')}`);
    }
    const key = `${eventKey}\u0000${version}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = compileSchema(schema);
      this.compiled.set(key, validate);
    }
    if (!validate(payload)) throw schemaViolation(`payload does not match ${eventKey} schemaVersion ${version}:`, issuesOf(validate.errors, '/payload'));
    return version;
  }
}

function entryOf(eventKey: string, extensionKey: string, description: string, schemas: Array<[string, JsonSchema]>): Entry {
  const sorted = [...schemas].sort(([a], [b]) => schemaVersionOrder(a, b));
  return { eventKey, extensionKey, description, schemas: new Map(sorted), summary: null, detail: null };
}

function summaryOf(entry: Entry): EventType {
  entry.summary ??= Object.freeze({
    eventKey: entry.eventKey,
    extensionKey: entry.extensionKey,
    description: entry.description,
    schemaVersions: Object.freeze([...entry.schemas.keys()]) as string[],
  });
  return entry.summary;
}
