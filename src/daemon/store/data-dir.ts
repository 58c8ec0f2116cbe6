import { chmod, lstat, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { StartupError } from '../errors.js';
import { FILE_MODE, ensurePrivateDir } from '../files.js';

/**
 * What the platform writes at the top of a data directory (either backend):
 * keep in step with the stores. A directory holding any of them is a platform
 * data directory, also one written by an earlier version.
 */
const PLATFORM_FILES = new Set([
  'users.json',
  'workspaces.json',
  'dead-letters.json',
  'dead-letters.log',
  'extension-config.json',
  'revocations.json',
  'api-tokens.json',
  'master.key',
  'jwt-secret',
  'initial-admin-password',
  'daemon.lock',
  'outbox.log',
  'deliveries.log',
  'chat.log',
  'webhook-requests.log',
  'audit.log',
  'revocations.log',
  'idempotency-keys.log',
]);

/** The platform's own folders, and the files in them that are its own. */
const PLATFORM_FOLDERS = new Map([
  ['catalog', /^[a-z0-9][a-z0-9._-]*\.json$/],
  ['events', /^segment-\d{6,}\.(log|idx)$/],
]);

/** Whether `name`, at the top of a directory, is something the platform writes there. */
export const isPlatformEntry = (name: string): boolean => PLATFORM_FILES.has(name) || PLATFORM_FOLDERS.has(name);

/**
 * What an operator may put in a new data directory before the first start: the
 * plugins folder (and whatever folder `--plugins-dir` names inside it), and the
 * `lost+found` of a file system mounted there.
 */
function preparedByOperator(name: string, dataDir: string, pluginsDir: string): boolean {
  if (name === 'plugins' || name === 'lost+found') return true;
  const inside = relative(dataDir, pluginsDir);
  return inside !== '' && !inside.startsWith('..') && inside.split(sep)[0] === name;
}

/**
 * Creates the data directory, or checks that an existing one may be used: it
 * is empty (but for what an operator prepares), or a platform data directory.
 * Anything else (a home directory, a git clone) is refused, so that the daemon
 * never writes into, or changes the modes in, a directory that is not its own.
 */
export async function openDataDir(dataDir: string, pluginsDir: string): Promise<void> {
  await ensurePrivateDir(dataDir, 'data directory');
  const entries = await readdir(dataDir).catch((error: NodeJS.ErrnoException) => {
    throw new StartupError(`cannot read the data directory ${dataDir} (${error.code ?? error.message})`);
  });
  if (entries.some(isPlatformEntry)) return;
  const foreign = entries.filter((name) => !preparedByOperator(name, dataDir, pluginsDir));
  if (foreign.length > 0) {
    throw new StartupError(
      `${dataDir} is not empty and is not a platform data directory (it holds ${foreign.sort().slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}); ` +
        'give a new or empty directory with --data-dir (or PLATFORM_DATA_DIR)',
    );
  }
}

/**
 * The platform's files are meant to be 0600: one copied in or restored with a
 * wider mode is tightened before anything reads it. Only the platform's own
 * files: whatever else is in the directory (plugins, an operator's notes) keeps
 * its mode. Returns the files tightened.
 */
export async function tightenPlatformFiles(dataDir: string): Promise<string[]> {
  const candidates: string[] = [];
  for (const entry of await readdir(dataDir, { withFileTypes: true })) {
    if (PLATFORM_FILES.has(entry.name)) candidates.push(join(dataDir, entry.name));
    const ownFile = PLATFORM_FOLDERS.get(entry.name);
    if (ownFile && entry.isDirectory()) {
      const folder = join(dataDir, entry.name);
      for (const name of await readdir(folder)) if (ownFile.test(name)) candidates.push(join(folder, name));
    }
  }
  const tightened: string[] = [];
  for (const file of candidates) {
    const stats = await lstat(file);
    if (stats.isFile() && (stats.mode & 0o077) !== 0) {
      await chmod(file, FILE_MODE);
      tightened.push(file);
    }
  }
  return tightened;
}
