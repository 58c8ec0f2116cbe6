import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the OS temp area. */
export function tempDir(prefix = 'platform-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}
