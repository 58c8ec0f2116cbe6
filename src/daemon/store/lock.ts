import { openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from '../errors.js';
import { FILE_MODE } from './files.js';

export interface DataDirLock {
  release(): void;
}

/**
 * One daemon per data directory: a lock file holding the owner's PID. A lock
 * left by a dead process is taken over; a live owner makes the start fail.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = join(dataDir, 'daemon.lock');
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(file, 'wx', FILE_MODE);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          try {
            unlinkSync(file);
          } catch {
            // Already gone: nothing to release.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = readOwner(file);
    if (owner !== null && isAlive(owner)) {
      throw new StartupError(
        `data directory ${dataDir} is in use by another platform daemon (pid ${owner}); stop it first or use another --data-dir`,
      );
    }
    try {
      unlinkSync(file);
    } catch {
      // Another starter removed the stale lock first; the next attempt decides.
    }
  }
  throw new StartupError(`data directory ${dataDir} is being claimed by another platform daemon`);
}

function readOwner(file: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
