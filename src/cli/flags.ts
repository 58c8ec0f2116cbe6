import { InvalidArgumentError, type Command } from 'commander';
import * as v from 'valibot';

/**
 * Flag values are checked by commander while it parses, before any request:
 * a bad value is a usage error (exit 2) whose message names the flag.
 */
export function parseWith<T>(schema: v.GenericSchema<string, T>): (value: string) => T {
  return (value) => {
    const result = v.safeParse(schema, value);
    if (!result.success) throw new InvalidArgumentError(result.issues[0].message);
    return result.output;
  };
}

/** A whole number in [min, max], written in decimal. */
export const integerFlag = (min: number, max: number) =>
  parseWith(
    v.pipe(
      v.string(),
      v.regex(/^\d+$/, `must be a whole number from ${min} to ${max}`),
      v.transform(Number),
      v.number(),
      v.minValue(min, `must be from ${min} to ${max}`),
      v.maxValue(max, `must be from ${min} to ${max}`),
    ),
  );

/** Seconds, for --timeout: a positive number up to a day. */
export const secondsFlag = parseWith(
  v.pipe(
    v.string(),
    v.regex(/^\d+(\.\d+)?$/, 'must be a number of seconds'),
    v.transform(Number),
    v.number(),
    v.minValue(0.001, 'must be more than 0 seconds'),
    v.maxValue(86_400, 'must be at most 86400 seconds'),
  ),
);

/** A JSON object, as events carry. */
export const jsonObjectFlag = parseWith(
  v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      try {
        return JSON.parse(dataset.value) as unknown;
      } catch {
        addIssue({ message: 'is not valid JSON' });
        return NEVER;
      }
    }),
    v.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be a JSON object, e.g. {"id":1}'),
  ),
);

/** One of a fixed set of words, any letter case; given back upper-case. */
export const choiceFlag = <T extends string>(choices: readonly T[]) =>
  parseWith(
    v.pipe(
      v.string(),
      v.transform((value) => value.toUpperCase()),
      v.picklist(choices, `must be ${choices.slice(0, -1).join(', ')}${choices.length > 1 ? ' or ' : ''}${choices.at(-1)}`),
    ),
  );

/** For variadic options (`--role A B` or `--role A --role B`): each value parsed, all collected. */
export const eachOf =
  <T>(parse: (value: string) => T) =>
  (value: string, previous: T[] | undefined): T[] => [...(previous ?? []), parse(value)];

/** `--yes`, for the commands that ask before they destroy. */
export const withYes = (command: Command) => command.option('--yes', 'do not ask for confirmation (required without a terminal)');
