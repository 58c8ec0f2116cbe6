import { mkdir, open, rename, unlink, chmod } from 'node:fs/promises';
import { dirname } from 'node:path';
import { unavailable } from '../errors.js';

export const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Creates the directory (0700) or tightens an existing one we own. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: DIR_MODE });
  await chmod(dir, DIR_MODE).catch(() => undefined);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `file` atomically and durably: the old contents stay intact until the
 * new ones are fully on disk, and the rename itself is made durable by syncing
 * the directory.
 */
export async function writeFileDurably(file: string, contents: string | Uint8Array): Promise<void> {
  const temp = `${file}.tmp`;
  try {
    const handle = await open(temp, 'w', FILE_MODE);
    try {
      await handle.writeFile(contents);
      await handle.sync();
    } finally {
      await handle.close();
    }
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
