import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

// Each test file runs in this one process; its daemons are stopped by then, so
// the folders go when it ends rather than piling up under /tmp run after run.
process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the OS temp area, removed when the test process ends. */
export async function tempDir(prefix = 'platform-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** tempDir, synchronously: for what a module needs when it loads. */
export function tempDirSync(prefix = 'platform-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** The files under `dir` this process holds open (Linux: read from /proc). */
export function openFilesUnder(dir: string): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(`${dir}/`) ? [target] : [];
    } catch {
      return []; // closed meanwhile, or the listing's own descriptor
    }
  });
}
