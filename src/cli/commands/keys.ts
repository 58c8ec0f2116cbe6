import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { examples } from '../help.js';
import { printLine } from '../output.js';

export function registerKeys(program: Command): void {
  program
    .command('keys')
    .description('master key of the secrets kept at rest')
    .command('rotate')
    .description('re-encrypt every stored secret under a new master key (run with the daemon stopped, or see README for several daemons)')
    .addHelpText(
      'after',
      examples(
        'platform keys rotate --data-dir ./data',
        'PLATFORM_MASTER_KEY=NEW,OLD platform keys rotate --database-url postgres://platform@db.example.com/platform',
      ),
    )
    .option('--data-dir <dir>', 'data directory (PLATFORM_DATA_DIR; default ./data); with a database, the one holding master.key')
    .option('--database-url <url>', 'rotate the secrets in this PostgreSQL database instead (PLATFORM_DATABASE_URL)')
    .option('--database-schema <name>', "schema of the platform's tables (PLATFORM_DATABASE_SCHEMA; default platform)")
    .action(async (flags: { dataDir?: string; databaseUrl?: string; databaseSchema?: string }) => {
      const config = await daemonConfig(flags);
      const { rotateMasterKey } = await import('../../daemon/store/rotate-master-key.js');
      const { resealed } = await rotateMasterKey(config);
      const where = config.database ? ` in schema ${config.database.schema}` : '';
      printLine(
        config.masterKey
          ? `re-encrypted ${resealed} secrets${where} under the first key of PLATFORM_MASTER_KEY; now set it to that key alone`
          : `re-encrypted ${resealed} secrets${where} under a new master key in ${config.dataDir}/master.key` +
              (config.database ? '; give every daemon on this database that file before it starts again' : ''),
      );
    });
}
