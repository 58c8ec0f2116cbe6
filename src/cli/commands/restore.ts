import { resolve } from 'node:path';
import type { Command } from 'commander';
import { withExample } from '../help.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { printLine } from '../output.js';
import { progressLine } from './backup.js';
import type { TrustedKeyring } from '../../daemon/backup/restore.js';

/**
 * The master key the restored daemon will use, from outside the archive:
 * PLATFORM_MASTER_KEY (the daemon will read it too), or --master-key-file
 * (restored as the data directory's master.key).
 */
async function trustedKeyring(masterKeyFile: string | undefined): Promise<TrustedKeyring> {
  const { SecretBox } = await import('../../daemon/secrets/box.js');
  const fromEnvironment = process.env.PLATFORM_MASTER_KEY || null;
  if (fromEnvironment && masterKeyFile) {
    throw usageError('give the master key once: PLATFORM_MASTER_KEY (which the restored daemon will use) or --master-key-file, not both');
  }
  try {
    if (fromEnvironment) return { box: SecretBox.fromEnvironment(fromEnvironment), source: 'PLATFORM_MASTER_KEY', inDataDir: false };
    if (masterKeyFile) return { box: await SecretBox.fromKeyringFile(masterKeyFile), source: masterKeyFile, inDataDir: true };
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw usageError(missing ? `${masterKeyFile} does not exist` : (error as Error).message);
  }
  throw usageError(
    "restore checks the archive's signature with the master key the restored daemon will use: set PLATFORM_MASTER_KEY " +
      'or pass --master-key-file (a copy of the old master.key); a key inside the archive cannot vouch for it',
  );
}

export function registerRestore(program: Command): void {
  withExample(
    program.command('restore').description('restore a backup archive into an empty data directory (offline: the daemon must not run on it)'),
    'platform restore platform-2026-11-23.tar.gz --data-dir /var/lib/platform --master-key-file /etc/platform/master.key',
  )
    .argument('<file>', 'an archive written by `platform backup`')
    .requiredOption('--data-dir <dir>', 'the data directory to create; must be empty or missing')
    .option(
      '--master-key-file <file>',
      "the master key of the daemon that made the archive (its master.key), which checks the archive's signature and becomes the restored master.key; or set PLATFORM_MASTER_KEY",
    )
    .action(async (file: string, flags: { dataDir: string; masterKeyFile?: string }) => {
      const trusted = await trustedKeyring(flags.masterKeyFile);
      const { restoreArchive, RestoreError } = await import('../../daemon/backup/restore.js');
      const dataDir = resolve(flags.dataDir);
      const progress = progressLine();
      let manifest;
      try {
        manifest = await restoreArchive(file, dataDir, trusted, (done, total, what) =>
          progress.show(`${what}: ${Math.round((done / Math.max(total, 1)) * 100)} %`),
        );
      } catch (error) {
        progress.end();
        if (error instanceof RestoreError) throw new CliError(error.message, EXIT.daemonError);
        throw error;
      }
      progress.end();
      printLine(`restored ${manifest.files.length} files into ${dataDir} (backup of platform ${manifest.platformVersion}, taken ${manifest.createdAt})`);
      printLine(
        trusted.inDataDir
          ? `its signature holds under the master key of ${trusted.source}, which the restored daemon will use (${dataDir}/master.key)`
          : 'its signature holds under PLATFORM_MASTER_KEY: start the restored daemon with the same PLATFORM_MASTER_KEY',
      );
      if (manifest.includesKeys) {
        printLine('the archive held jwt-secret: sessions stay valid');
        return;
      }
      printLine('- sessions stay valid only with the same PLATFORM_JWT_SECRET (or the old jwt-secret file);');
      printLine('  otherwise every session is invalidated and users log in again');
    });
}
