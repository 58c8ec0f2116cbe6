import { readdirSync, readFileSync } from 'node:fs';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^(\d{4})-([a-z0-9-]+)\.sql$/;

/**
 * Numbers taken by changes still on their way (their file arrives with them):
 * one missing here is not a gap. Nothing is skipped for it: `migrate` applies
 * every migration a schema has not recorded, whatever its number, so 0010
 * arriving after 0011 ran is applied then. A number goes from here once its
 * file is in.
 */
const RESERVED = new Set([10]);

function readMigrations(): Migration[] {
  const folder = new URL('.', import.meta.url);
  const migrations = readdirSync(folder)
    .map((file) => ({ file, match: MIGRATION_FILE.exec(file) }))
    .filter((entry) => entry.match !== null)
    .map(({ file, match }) => ({
      version: Number(match![1]),
      name: match![2]!,
      sql: readFileSync(new URL(file, folder), 'utf8'),
    }))
    .sort((a, b) => a.version - b.version);
  // A gap or a repeated number is a packaging mistake; applying around it would fork the schema.
  let expected = 1;
  for (const migration of migrations) {
    while (migration.version > expected && RESERVED.has(expected)) expected += 1;
    if (migration.version !== expected) throw new Error(`migration files are not numbered 1..n: ${migration.version} (${migration.name}) where ${expected} belongs`);
    expected += 1;
  }
  return migrations;
}

/**
 * Every migration, in order: the numbered `.sql` files beside this module
 * (the build copies them into dist/). A migration is never changed once
 * released: a change of schema is a new file with the next number.
 */
export const MIGRATIONS: readonly Migration[] = readMigrations();
