import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'uvu';
import { tempDir } from './temp.js';

/**
 * Mounts a tmpfs of `size` (mount's syntax: 64k, 16m) on the existing
 * directory `dir`, its root with `mode` when given; returns its unmount.
 */
export function mountSmallDisk(dir: string, size: string, mode?: string): () => void {
  const options = `size=${size}${mode === undefined ? '' : `,mode=${mode}`}`;
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'ignore' });
  return () => execFileSync('umount', [dir]);
}

/** Whether this process may mount a tmpfs (it needs root), tried once when the first test file asks. */
function mayMount(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'platform-mount-check-'));
  try {
    mountSmallDisk(dir, '64k')();
    return true;
  } catch {
    return false;
  } finally {
    rmdirSync(dir);
  }
}

let mountable: boolean | undefined;

/**
 * `suite` where a tmpfs can be mounted to fill a disk, a skip where it cannot
 * (mounting needs root): decided when the test file loads, so that a run that
 * cannot fill a disk reports the test as skipped, never as passed. Takes
 * `test` or what `filesOnly(test)` gave.
 */
export function needsSmallDisk(suite: Test | Test['skip']): Test | Test['skip'] {
  mountable ??= mayMount();
  if (mountable) return suite;
  return 'skip' in suite ? suite.skip : suite;
}

/** Runs `run` in a fresh directory on a tmpfs of `size`, so that a test can fill the disk. Only in a test marked `needsSmallDisk`. */
export async function withSmallDisk(size: string, run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await tempDir('platform-disk-');
  const unmount = mountSmallDisk(dir, size);
  try {
    await run(dir);
  } finally {
    unmount();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Writes `file` until the disk refuses more (ENOSPC); returns its size in bytes. */
export function fillDisk(file: string): number {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  let size = 0;
  try {
    // A short write takes what is left; the next one fails with ENOSPC.
    for (;;) size += writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
  return size;
}
