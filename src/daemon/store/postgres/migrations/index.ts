import { readdirSync, readFileSync } from 'node:fs';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^(\d{4})-([a-z0-9-]+)\.sql$/;

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
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new Error(`migration files are not numbered 1..n: ${migration.version} (${migration.name}) at place ${index + 1}`);
  });
  return migrations;
}

/**
 * Every migration, in order: the numbered `.sql` files beside this module
 * (the build copies them into dist/). A migration is never changed once
 * released: a change of schema is a new file with the next number.
 */
export const MIGRATIONS: readonly Migration[] = readMigrations();
