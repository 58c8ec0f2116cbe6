import * as v from 'valibot';
import { DomainError, type ValidationIssue } from './errors.js';

export const isPlainObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === 'object' && input !== null && !Array.isArray(input);

/**
 * A JSON object with exactly these fields. valibot's own object schemas accept
 * arrays and ignore unknown keys; this one rejects both, so a typo in a field
 * name is an error instead of a silently ignored value.
 */
export function jsonObject<const TEntries extends v.ObjectEntries>(entries: TEntries) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, 'Invalid type: Expected a JSON object'), v.strictObject(entries));
}

/**
 * An answer lists at most this many issues, and cuts their paths and messages
 * to MAX_ISSUE_TEXT characters: valibot's messages quote the value received,
 * and a hostile body (a 200 KB string, 10,000 unknown keys) must not come back
 * larger than it went in.
 */
const MAX_ISSUES = 20;
const MAX_ISSUE_TEXT = 200;

const cut = (text: string) => (text.length > MAX_ISSUE_TEXT ? `${text.slice(0, MAX_ISSUE_TEXT)}…` : text);

/** Parses or throws 400 VALIDATION_ERROR with `meta.issues`; `prefix` names where the input came from. */
export function parseOrThrow<TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
  prefix = '',
): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const issues: ValidationIssue[] = result.issues.slice(0, MAX_ISSUES).map((issue) => {
    const path = v.getDotPath(issue) ?? '';
    return { path: cut(prefix && path ? `${prefix}.${path}` : prefix || path), message: cut(issue.message) };
  });
  const first = issues[0]!;
  const message = first.path ? `${first.path}: ${first.message}` : first.message;
  throw new DomainError('VALIDATION_ERROR', message, { issues });
}

export const NonEmptyString = (max: number) =>
  v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(max, `must be at most ${max} characters`));

/** A lowercase identifier used for extension keys and workspace ids. */
export const Slug = v.pipe(
  v.string(),
  v.regex(/^[a-z][a-z0-9-]{1,63}$/, 'must be 2-64 characters: a lowercase letter, then lowercase letters, digits or hyphens'),
);

/** Query-string integers ("20" → 20) within bounds. */
export const QueryInt = (min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d{1,9}$/, 'must be a whole number'),
    v.transform(Number),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );

/** The query parameter of a paged listing: an opaque cursor from `meta.nextCursor`. */
export const CursorParam = v.optional(v.pipe(v.string(), v.maxLength(300, 'is not a cursor of this listing')));
