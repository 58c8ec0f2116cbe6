import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { withExample } from '../help.js';
import { ApiError } from '../../contract/client.js';
import { clientFor } from '../client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { printLine } from '../output.js';

/** A progress line on a terminal (stderr), nothing otherwise. */
export function progressLine(): { show(text: string): void; end(): void } {
  const terminal = process.stderr.isTTY === true;
  let shown = false;
  return {
    show(text) {
      if (!terminal) return;
      process.stderr.write(`\r${text}\x1b[K`);
      shown = true;
    },
    end() {
      if (shown) process.stderr.write('\n');
    },
  };
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export function registerBackup(program: Command): void {
  withExample(
    program.command('backup').description('download a consistent snapshot of the running daemon into an archive (ADMIN)'),
    'platform backup --out platform-$(date +%F).tar.gz',
  )
    .requiredOption('--out <file>', 'the archive to write (.tar.gz); must not exist yet')
    .option('--include-keys', 'also archive master.key and jwt-secret (then the archive alone decrypts every secret)')
    .action(async (flags: { out: string; includeKeys?: boolean }, command: Command) => {
      if (existsSync(flags.out)) throw usageError(`${flags.out} exists; choose a new file name`);
      // An archive, not the envelope: fetched by its URL, with no timeout (a large data directory takes a while).
      const { url, token, href } = clientFor(command);
      let response: Response;
      try {
        response = await fetch(href('downloadBackup', { query: { includeKeys: flags.includeKeys === true ? 'true' : 'false' } }), {
          headers: token ? { authorization: `Bearer ${token}` } : {},
        });
      } catch (error) {
        const reason = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
        throw new CliError(`cannot reach the platform daemon at ${url} (${reason}); is \`platform serve\` running?`, EXIT.unreachable);
      }
      if (!response.ok || !response.body) {
        const envelope = (await response.json().catch(() => null)) as { code?: string; message?: string } | null;
        throw new ApiError(envelope?.message ?? `the daemon answered ${response.status}`, envelope?.code ?? 'ERROR', response.status, null);
      }

      const partial = `${flags.out}.partial`;
      const progress = progressLine();
      let received = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          received += chunk.length;
          progress.show(`downloading the backup: ${megabytes(received)}`);
          callback(null, chunk);
        },
      });
      try {
        await pipeline(Readable.fromWeb(response.body as never), counter, createWriteStream(partial, { mode: 0o600 }));
        progress.end();
        const { verifyArchive } = await import('../../daemon/backup/restore.js');
        const verify = progressLine();
        const manifest = await verifyArchive(partial, (done, total) => verify.show(`verifying: ${Math.round((done / total) * 100)} %`));
        verify.end();
        await rename(partial, flags.out);
        printLine(`backup written to ${flags.out}: ${manifest.files.length} files, ${megabytes(received)}, platform ${manifest.platformVersion}`);
        printLine(
          manifest.includesKeys
            ? 'it includes master.key and jwt-secret: keep it as secret as the data directory itself'
            : 'keys not included: keep master.key (or PLATFORM_MASTER_KEY) and PLATFORM_JWT_SECRET safe separately',
        );
      } catch (error) {
        progress.end();
        await rm(partial, { force: true });
        if (error instanceof CliError) throw error;
        throw new CliError(`the backup did not complete: ${(error as Error).message}`, EXIT.daemonError);
      }
    });
}
