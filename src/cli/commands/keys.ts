import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { examples } from '../help.js';
import { printLine } from '../output.js';

export function registerKeys(program: Command): void {
  program
    .command('keys')
    .description('master key of the secrets kept at rest')
    .command('rotate')
    .description('re-encrypt every stored secret under a new master key (run with the daemon stopped)')
    .addHelpText('after', examples('platform keys rotate --data-dir ./data'))
    .option('--data-dir <dir>', 'data directory (PLATFORM_DATA_DIR; default ./data)')
    .action(async (flags: { dataDir?: string }) => {
      const config = await daemonConfig({ dataDir: flags.dataDir });
      const { rotateMasterKey } = await import('../../daemon/secrets/rotate.js');
      const { resealed } = await rotateMasterKey(config);
      printLine(
        config.masterKey
          ? `re-encrypted ${resealed} secrets under the first key of PLATFORM_MASTER_KEY; now set it to that key alone`
          : `re-encrypted ${resealed} secrets under a new master key in ${config.dataDir}/master.key`,
      );
    });
}
