import { existsSync, openSync, readFileSync, statSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { StartupError } from '../errors.js';
import { FILE_MODE } from '../files.js';

export interface DataDirLock {
  /** Set when a stale lock was taken over: says whose, for the start-up line. */
  readonly tookOver: string | null;
  release(): void;
}

interface LockOwner {
  pid: number;
  host: string | null;
  /** Boot and start time of the process (Linux), so that a reused PID is not mistaken for the owner. */
  started: string | null;
}

/**
 * One daemon per data directory: a lock file naming its owner (PID, host and
 * process start identity). A lock whose owner is not running on this host is
 * stale and taken over: a crashed daemon's, or one copied with the directory
 * from another machine or container, whose PID may be alive here as another
 * process. A live owner makes the start fail.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = join(dataDir, 'daemon.lock');
  let tookOver: string | null = null;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(file, 'wx', FILE_MODE);
      writeSync(fd, `${process.pid}\n${hostname()}\n${startIdentity(process.pid) ?? ''}\n`);
      closeSync(fd);
      let released = false;
      return {
        tookOver,
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
    const staleness = owner === null ? 'unreadable' : whyStale(owner);
    if (staleness === null) {
      throw new StartupError(
        `data directory ${dataDir} is in use by another platform daemon (pid ${owner!.pid}); stop it first or use another --data-dir`,
      );
    }
    tookOver = `took over the stale lock ${file} (${owner ? `pid ${owner.pid}${owner.host ? ` on ${owner.host}` : ''}, ` : ''}${staleness})`;
    try {
      unlinkSync(file);
    } catch {
      // Another starter removed the stale lock first; the next attempt decides.
    }
  }
  throw new StartupError(`data directory ${dataDir} is being claimed by another platform daemon`);
}

/**
 * Commands that work on a data directory offline (key rotation, password
 * reset) must not create one where a path was mistyped.
 */
export function assertPlatformDataDir(dataDir: string): void {
  if (!existsSync(dataDir) || !statSync(dataDir).isDirectory()) {
    throw new StartupError(`${dataDir} does not exist; give the daemon's data directory with --data-dir (or PLATFORM_DATA_DIR)`);
  }
  if (!existsSync(join(dataDir, 'users.json'))) {
    throw new StartupError(
      `${dataDir} is not a platform data directory (it has no users.json); give the daemon's data directory with --data-dir (or PLATFORM_DATA_DIR)`,
    );
  }
}

function readOwner(file: string): LockOwner | null {
  try {
    const [pidLine, host, started] = readFileSync(file, 'utf8').split('\n');
    const pid = Number.parseInt(pidLine ?? '', 10);
    if (!Number.isInteger(pid) || pid <= 0) return null;
    return { pid, host: host || null, started: started || null };
  } catch {
    return null;
  }
}

/** Null while the owner is running on this host; otherwise why the lock is stale. */
function whyStale(owner: LockOwner): string | null {
  if (owner.host !== null && owner.host !== hostname()) return 'written on another host';
  if (!isAlive(owner.pid)) return 'not running';
  if (owner.started !== null) {
    const current = startIdentity(owner.pid);
    if (current !== null && current !== owner.started) return 'that PID is now another process';
  }
  return null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Linux: boot id and the process's start time in clock ticks since boot; null elsewhere. */
function startIdentity(pid: number): string | null {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state is field 3, starttime field 22.
    const startTicks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return startTicks ? `${boot}:${startTicks}` : null;
  } catch {
    return null;
  }
}
