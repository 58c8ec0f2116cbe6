import * as v from 'valibot';
import { DomainError, type ValidationIssue } from './errors.js';

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
