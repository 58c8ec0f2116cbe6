import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type Test } from 'uvu';
import { tempDir } from './temp.js';

const mount = (size: string, dir: string) => execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });

/** Mounting a tmpfs needs root (and a system that allows it): tried once, when this file loads. */
const canMountSmallDisk = ((): boolean => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-disk-probe-'));
  try {
    mount('64k', dir);
    execFileSync('umount', [dir]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();
if (!canMountSmallDisk) console.log('tests that fill a disk are skipped: a tmpfs cannot be mounted here (it needs root)');

/** `register` (test, or filesOnly(test)) where a small disk can be mounted; uvu's `test.skip` elsewhere, so the test is counted as skipped. */
export function needsSmallDisk(register: Test | Test['skip']): Test | Test['skip'] {
  return canMountSmallDisk ? register : test.skip;
}

/**
 * Runs `run` in a fresh directory on a tmpfs of `size` (mount's syntax: 64k,
 * 16m), so that a test can fill the disk. Register such a test with
 * needsSmallDisk: mounting needs root.
 */
export async function withSmallDisk(size: string, run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await tempDir('platform-disk-');
  mount(size, dir);
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
