import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { JsonSchema } from '../../contract/manifest.js';
import { DomainError, type ValidationIssue } from '../errors.js';

/**
 * JSON Schema (2020-12) through Ajv: it compiles a schema once into a
 * function, which keeps validating a payload cheap next to the rest of a
 * publish, and it implements the whole specification, which a hand-written
 * validator would not. Unknown keywords are ignored, as the specification
 * says (not strict mode): a schema written for other tools still compiles.
 * `format` is checked for the formats ajv-formats knows (date-time, email,
 * uri, uuid, …). No schema is ever fetched: a `$ref` must resolve inside
 * its own document.
 */
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
formats.default(ajv);

/** An answer lists at most this many issues (as the request schemas' answers do). */
const MAX_ISSUES = 20;
const MAX_ISSUE_TEXT = 200;

const cut = (text: string) => (text.length > MAX_ISSUE_TEXT ? `${text.slice(0, MAX_ISSUE_TEXT)}…` : text);
const pointerSegment = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Compiles a schema. Its `$id`, if any, is not kept in the shared registry: two
 * schema versions of one event type may carry the same `$id`, and a schema
 * must not be able to resolve another's `$ref`s.
 */
export function compileSchema(schema: JsonSchema): ValidateFunction {
  try {
    return ajv.compile(schema);
  } finally {
    if (typeof schema === 'object') ajv.removeSchema(schema);
  }
}

/** Why `schema` is no JSON Schema (2020-12) Ajv can compile, or null. */
export function schemaProblem(schema: JsonSchema): string | null {
  if (typeof schema === 'boolean') return null;
  if (!ajv.validateSchema(schema)) return ajv.errorsText(ajv.errors, { dataVar: 'schema' });
  try {
    compileSchema(schema);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Ajv's errors as the API's issues: `path` a JSON pointer into the request
 * body (`prefix` names where the validated value sits, e.g. `/payload`), and
 * for a missing or unexpected property, the pointer to that property.
 */
export function issuesOf(errors: readonly ErrorObject[] | null | undefined, prefix: string): ValidationIssue[] {
  return (errors ?? []).slice(0, MAX_ISSUES).map((error) => {
    let path = `${prefix}${error.instancePath}`;
    let message = error.message ?? 'is not valid';
    const params = error.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
    if (error.keyword === 'required' && params.missingProperty !== undefined) {
      path += `/${pointerSegment(params.missingProperty)}`;
      message = 'is required';
    } else if (error.keyword === 'additionalProperties' && params.additionalProperty !== undefined) {
      path += `/${pointerSegment(params.additionalProperty)}`;
      message = 'is not allowed here';
    } else if (error.keyword === 'enum' && params.allowedValues) {
      message = `must be one of ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`;
    }
    return { path: cut(path), message: cut(message) };
  });
}

/** 400 VALIDATION_ERROR listing the issues; the message names the first. */
export function schemaViolation(what: string, issues: readonly ValidationIssue[]): DomainError {
  const first = issues[0];
  const detail = first ? `${first.path || '/'}: ${first.message}` : 'is not valid';
  return new DomainError('VALIDATION_ERROR', `${what} ${detail}`, { issues });
}
