import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const folders: string[] = [];

// A daemon's output under load runs to hundreds of MB; a failure quotes what it needs,
// so the files go when the bench ends instead of piling up under /tmp run after run.
process.once('exit', () => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A fresh file for a process's output, removed when the bench ends. */
export function benchLogFile(name: string): string {
  const folder = mkdtempSync(join(tmpdir(), 'platform-bench-log-'));
  folders.push(folder);
  return join(folder, name);
}
