import { StartupError } from '../../errors.js';
import { quoteIdentifier, type Database } from './database.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

/** First key of the advisory lock migrations take; the second is the schema's hash. */
const MIGRATION_LOCK = 0x706c6174; // "plat"

/**
 * Brings the database's schema up to this version of the platform, one
 * transaction per migration, each under a transaction-scoped advisory lock:
 * daemons starting together wait for each other, and the one that comes
 * second finds the migration recorded and skips it. Returns what was applied.
 */
export async function migrate(database: Database): Promise<Migration[]> {
  const schema = quoteIdentifier(database.schema);
  const applied: Migration[] = [];
  for (const migration of MIGRATIONS) {
    const ran = await database.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, database.schema]);
      await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await tx.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const newest = await tx.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${schema}.schema_migrations`);
      const latest = MIGRATIONS[MIGRATIONS.length - 1]!.version;
      if ((newest.rows[0]?.version ?? 0) > latest) {
        throw new StartupError(
          `schema ${database.schema} was migrated by a newer platform (migration ${newest.rows[0]!.version}; this one knows ${latest}); ` +
            'upgrade platform before running it on this database',
        );
      }
      const done = await tx.query(`SELECT 1 FROM ${schema}.schema_migrations WHERE version = $1`, [migration.version]);
      if (done.rowCount) return false;
      await tx.query(migration.sql);
      await tx.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      return true;
    });
    if (ran) applied.push(migration);
  }
  return applied;
}
