import { DomainError, StartupError } from '../../errors.js';
import { Database } from './database.js';
import { migrate } from './migrate.js';
import type { Migration } from './migrations/index.js';
import { redactUrl, type DatabaseSettings } from '../../database-settings.js';

/**
 * Connects and brings the schema up to date, as a daemon start and
 * `platform db migrate` do. A database that cannot be reached, refuses the
 * login or the migration is a StartupError naming it (password hidden).
 */
export async function openMigratedDatabase(
  settings: DatabaseSettings,
  onIdleError: (error: Error) => void,
): Promise<{ database: Database; applied: Migration[] }> {
  const database = new Database(settings, onIdleError);
  try {
    return { database, applied: await migrate(database) };
  } catch (error) {
    await database.close().catch(() => undefined);
    if (error instanceof StartupError) throw error;
    const cause = error instanceof DomainError && error.cause instanceof Error ? error.cause : error;
    throw new StartupError(`database ${redactUrl(settings.url)}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}
