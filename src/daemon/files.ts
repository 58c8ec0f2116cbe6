import { mkdir, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StartupError, unavailable } from './errors.js';

export const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/**
 * Creates the directory and its missing parents (0700), or leaves an existing
 * one as it is: its mode is its owner's choice. One level at a time, not
 * `mkdir -p`: Node's recursive mkdir loops forever, at full CPU, where mkdir
 * answers ENOENT under a parent that exists (/proc). A path that cannot be
 * created is a StartupError naming it and why, in one line.
 */
export async function ensurePrivateDir(dir: string, what = 'directory'): Promise<void> {
  const missing: string[] = [];
  for (let path = dir; ; path = dirname(path)) {
    const found = await stat(path).catch((error: NodeJS.ErrnoException) => error);
    if (!(found instanceof Error)) {
      if (found.isDirectory()) break;
      throw new StartupError(`cannot use ${dir} as the ${what}: ${path === dir ? 'it' : path} is not a directory`);
    }
    // ENOTDIR: a parent is a file; going up names it.
    if ((found.code !== 'ENOENT' && found.code !== 'ENOTDIR') || dirname(path) === path) throw new StartupError(`cannot create the ${what} ${dir}: ${whyNot(found, path)}`);
    missing.unshift(path);
  }
  for (const path of missing) {
    try {
      await mkdir(path, { mode: DIR_MODE });
    } catch (error) {
      // Created meanwhile by another process: fine, as long as it is a directory.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && (await stat(path)).isDirectory()) continue;
      throw new StartupError(`cannot create the ${what} ${dir}: ${whyNot(error as NodeJS.ErrnoException, path)}`);
    }
  }
}

function whyNot(error: NodeJS.ErrnoException, path: string): string {
  switch (error.code) {
    case 'ENOENT':
      return `${dirname(path)} does not accept new directories`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied on ${path}`;
    case 'EROFS':
      return `${path} is on a read-only file system`;
    case 'ENOSPC':
    case 'EDQUOT':
      return 'the disk is full';
    default:
      return `${path}: ${error.code ?? error.message}`;
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** What a new file holds: its contents, or a writer that puts them in piece by piece. */
export type FileContents = string | Uint8Array | ((handle: FileHandle) => Promise<void>);

/**
 * Writes and fsyncs a new file (the caller renames it into place); a write
 * that fails removes it, and answers 503 where storage refused.
 */
export async function writeSynced(file: string, contents: FileContents): Promise<void> {
  try {
    const handle = await open(file, 'w', FILE_MODE);
    try {
      if (typeof contents === 'function') await contents(handle);
      else await handle.writeFile(contents);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await unlink(file).catch(() => undefined);
    throw asStorageError(error);
  }
}

/**
 * Replaces `file` atomically and durably: the old contents stay intact until the
 * new ones are fully on disk, and the rename itself is made durable by syncing
 * the directory.
 */
export async function writeFileDurably(file: string, contents: FileContents): Promise<void> {
  const temp = `${file}.tmp`;
  await writeSynced(temp, contents);
  try {
    await rename(temp, file);
    await fsyncDir(dirname(file));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw asStorageError(error);
  }
}

const STORAGE_UNAVAILABLE = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EACCES', 'EPERM', 'EMFILE', 'ENFILE']);

/** Maps a failed disk operation to 503 UNAVAILABLE; the message leaves out the path. */
export function asStorageError(error: unknown): Error {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code && STORAGE_UNAVAILABLE.has(code)) {
    const reason = code === 'ENOSPC' || code === 'EDQUOT' ? 'disk full' : code;
    const mapped = unavailable(`storage is not writable (${reason}); nothing was changed`);
    mapped.cause = error;
    return mapped;
  }
  return error as Error;
}

export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}
