import { isDeepStrictEqual } from 'node:util';
import { MANIFEST_JSON_SCHEMA, type JsonSchema, type Manifest } from '../../contract/manifest.js';
import type { ValidationIssue } from '../errors.js';
import { compileSchema, issuesOf, schemaProblem, schemaViolation } from './json-schema.js';

let validateShape: ReturnType<typeof compileSchema> | null = null;

/**
 * A manifest as the version being published declares it: it passes the
 * manifest's JSON Schema, then the rules a schema cannot say (it names this
 * extension and version, everything it declares is under the extension's own
 * key, each event type and each subscription once, each schema a JSON Schema
 * Ajv compiles). Every problem is listed with its JSON pointer. Throws 400.
 */
export function parseManifest(extensionKey: string, version: string, input: Record<string, unknown>): Manifest {
  validateShape ??= compileSchema(MANIFEST_JSON_SCHEMA as unknown as Record<string, unknown>);
  if (!validateShape(input)) throw schemaViolation('manifest', issuesOf(validateShape.errors, '/manifest'));
  const manifest = input as unknown as Manifest;
  const issues: ValidationIssue[] = [];
  const own = `${extensionKey}.`;
  if (manifest.extensionKey !== extensionKey) {
    issues.push({ path: '/manifest/extensionKey', message: `must be ${extensionKey}, the extension the version is published for` });
  }
  if (manifest.version !== version) issues.push({ path: '/manifest/version', message: `must be ${version}, the version being published` });
  manifest.permissions?.forEach((permission, index) => {
    if (!permission.startsWith(own)) issues.push({ path: `/manifest/permissions/${index}`, message: `must begin with "${own}"` });
  });
  const declared = new Set<string>();
  manifest.publishes?.forEach(({ eventKey, schemaVersion, schema }, index) => {
    const at = `/manifest/publishes/${index}`;
    if (!eventKey.startsWith(own)) issues.push({ path: `${at}/eventKey`, message: `must begin with "${own}"` });
    const type = `${eventKey} ${schemaVersion}`;
    if (declared.has(type)) issues.push({ path: `${at}/schemaVersion`, message: `declares schemaVersion ${schemaVersion} of ${eventKey} a second time` });
    declared.add(type);
    const problem = schemaProblem(schema);
    if (problem) issues.push({ path: `${at}/schema`, message: `is not a JSON Schema (2020-12): ${problem}` });
  });
  const subscribed = new Set<string>();
  manifest.subscribes?.forEach(({ eventKey, kind, path }, index) => {
    const at = `/manifest/subscribes/${index}`;
    if (subscribed.has(`${eventKey} ${kind}`)) issues.push({ path: at, message: `subscribes to ${eventKey} as ${kind} a second time` });
    subscribed.add(`${eventKey} ${kind}`);
    if (path !== undefined && kind !== 'EXTERNAL_SERVICE') issues.push({ path: `${at}/path`, message: 'is for EXTERNAL_SERVICE subscriptions only' });
  });
  const fields = new Set<string>();
  manifest.configuration?.forEach(({ name }, index) => {
    if (fields.has(name)) issues.push({ path: `/manifest/configuration/${index}/name`, message: `names ${name} a second time` });
    fields.add(name);
  });
  if (issues.length > 0) throw schemaViolation('manifest', issues);
  return manifest;
}

/** Whether two schemas are the same document (key order aside): a published schema never changes. */
export const sameSchema = (a: JsonSchema, b: JsonSchema): boolean => isDeepStrictEqual(a, b);
