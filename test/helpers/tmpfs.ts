import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tempDir } from './temp.js';

/**
 * Runs `run` in a fresh directory on a tmpfs of `size` (mount's syntax: 64k,
 * 16m), so that a test can fill the disk. Mounting needs root: where it is
 * refused, a skip line is printed and `run` is not called.
 */
export async function withSmallDisk(size: string, run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await tempDir('platform-disk-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    await rm(dir, { recursive: true, force: true });
    console.log('  (skipped: cannot mount a tmpfs here to fill a disk)');
    return;
  }
  try {
    await run(dir);
  } finally {
    execFileSync('umount', [dir]);
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
