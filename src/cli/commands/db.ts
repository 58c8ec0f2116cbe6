import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { DaemonConfig } from '../../daemon/config.js';
import { daemonConfig } from '../daemon-config.js';
import { usageError } from '../errors.js';
import { withExample } from '../help.js';
import { printLine, printTable } from '../output.js';

interface DatabaseFlags {
  databaseUrl?: string;
  databaseSchema?: string;
}

export function registerDb(program: Command): void {
  const db = program.command('db').description('the PostgreSQL database of a platform that keeps its state there (--database-url)');
  withExample(
    db.command('migrate').description('bring the database schema up to this version of platform (the daemon also does it when it starts)'),
    'platform db migrate --database-url postgres://platform@db.example.com/platform',
  )
    .option('--database-url <url>', 'PostgreSQL URL (PLATFORM_DATABASE_URL)')
    .option('--database-schema <name>', "schema of the platform's tables (PLATFORM_DATABASE_SCHEMA; default platform)")
    .action(async (flags: DatabaseFlags) => {
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

  withExample(
    db
      .command('import')
      .description('copy a data directory (its daemon stopped) into an empty database, secrets sealed as they are'),
    'platform db import --data-dir ./data --database-url postgres://platform@db.example.com/platform',
  )
    .option('--data-dir <dir>', 'the data directory to copy (PLATFORM_DATA_DIR; default ./data)')
    .option('--database-url <url>', 'PostgreSQL URL (PLATFORM_DATABASE_URL)')
    .option('--database-schema <name>', "schema of the platform's tables (PLATFORM_DATABASE_SCHEMA; default platform)")
    .action(async (flags: DatabaseFlags & { dataDir?: string }) => {
      const config = await daemonConfig(flags);
      if (!config.database) throw usageError('give the database with --database-url or PLATFORM_DATABASE_URL');
      const { importDataDir } = await import('../../daemon/store/import.js');
      const { redactUrl } = await import('../../daemon/database-settings.js');
      const copied = await importDataDir(config.dataDir, config.database);
      printLine(`copied ${config.dataDir} into schema ${config.database.schema} of ${redactUrl(config.database.url)}:`);
      printTable(copied, [
        { header: 'KIND', value: (row) => row.kind },
        { header: 'COPIED', value: (row) => row.count },
      ]);
      for (const line of toCarryOver(config)) printLine(line);
    });
}

/** What the database does not hold and every daemon on it needs, as the data directory had it. */
function toCarryOver(config: DaemonConfig): string[] {
  const lines = ['every daemon on this database needs, as this data directory had them:'];
  lines.push(
    config.masterKey
      ? '  - the same PLATFORM_MASTER_KEY: the secrets stay sealed with it'
      : `  - ${join(config.dataDir, 'master.key')} in its data directory (or its keys as PLATFORM_MASTER_KEY): the secrets stay sealed with it`,
  );
  lines.push(
    config.jwtSecret
      ? '  - the same PLATFORM_JWT_SECRET, or every session ends'
      : `  - ${join(config.dataDir, 'jwt-secret')} in its data directory (or as PLATFORM_JWT_SECRET), or every session ends`,
  );
  if (existsSync(config.pluginsDir) && readdirSync(config.pluginsDir).length > 0) {
    lines.push(`  - the in-process plugins of ${config.pluginsDir}`);
  }
  return lines;
}
