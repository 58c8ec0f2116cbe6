import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { usageError } from '../errors.js';
import { withExample } from '../help.js';
import { printLine } from '../output.js';

export function registerDb(program: Command): void {
  const db = program.command('db').description('the PostgreSQL database of a platform that keeps its state there (--database-url)');
  withExample(
    db.command('migrate').description('bring the database schema up to this version of platform (the daemon also does it when it starts)'),
    'platform db migrate --database-url postgres://platform@db.example.com/platform',
  )
    .option('--database-url <url>', 'PostgreSQL URL (PLATFORM_DATABASE_URL)')
    .option('--database-schema <name>', "schema of the platform's tables (PLATFORM_DATABASE_SCHEMA; default platform)")
    .action(async (flags: { databaseUrl?: string; databaseSchema?: string }) => {
      const { database: settings } = await daemonConfig(flags);
      if (!settings) throw usageError('give the database with --database-url or PLATFORM_DATABASE_URL');
      const { openMigratedDatabase } = await import('../../daemon/store/postgres/connect.js');
      const { MIGRATIONS } = await import('../../daemon/store/postgres/migrations/index.js');
      const { database, applied } = await openMigratedDatabase(settings, () => undefined);
      await database.close();
      const latest = MIGRATIONS[MIGRATIONS.length - 1]!;
      printLine(
        applied.length > 0
          ? `applied ${applied.map((migration) => `${migration.version} (${migration.name})`).join(', ')} to schema ${settings.schema}`
          : `schema ${settings.schema} is up to date (migration ${latest.version}, ${latest.name})`,
      );
    });
}
