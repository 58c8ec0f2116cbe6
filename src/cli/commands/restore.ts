import { resolve } from 'node:path';
import type { Command } from 'commander';
import { withExample } from '../help.js';
import { CliError, EXIT } from '../errors.js';
import { printLine } from '../output.js';
import { progressLine } from './backup.js';

export function registerRestore(program: Command): void {
  withExample(
    program.command('restore').description('restore a backup archive into an empty data directory (offline: the daemon must not run on it)'),
    'platform restore platform-2026-11-23.tar.gz --data-dir /var/lib/platform',
  )
    .argument('<file>', 'an archive written by `platform backup`')
    .requiredOption('--data-dir <dir>', 'the data directory to create; must be empty or missing')
    .action(async (file: string, flags: { dataDir: string }) => {
      const { restoreArchive, RestoreError } = await import('../../daemon/backup/restore.js');
      const dataDir = resolve(flags.dataDir);
      const progress = progressLine();
      let manifest;
      try {
        manifest = await restoreArchive(file, dataDir, (done, total, what) =>
          progress.show(`${what}: ${Math.round((done / Math.max(total, 1)) * 100)} %`),
        );
      } catch (error) {
        progress.end();
        if (error instanceof RestoreError) throw new CliError(error.message, EXIT.daemonError);
        throw error;
      }
      progress.end();
      printLine(`restored ${manifest.files.length} files into ${dataDir} (backup of platform ${manifest.platformVersion}, taken ${manifest.createdAt})`);
      if (manifest.includesKeys) {
        printLine('the archive held master.key and jwt-secret: secrets decrypt and sessions stay valid');
        return;
      }
      printLine('before starting the daemon on it, supply the keys the archive does not hold:');
      printLine(`- secrets (subscription signing secrets, SECRET settings) decrypt only with the same master key:`);
      printLine(`  set the same PLATFORM_MASTER_KEY, or copy the old master.key into ${dataDir}`);
      printLine(`- sessions stay valid only with the same PLATFORM_JWT_SECRET (or the old jwt-secret file);`);
      printLine('  otherwise every session is invalidated and users log in again');
    });
}
