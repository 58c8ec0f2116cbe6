import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/**
 * Keeps what explains a failure (a daemon's log, the readings that led to it)
 * under test-artifacts/ (git ignores it), where the next look finds it, named
 * after the backend of the pass (the two passes run at once); answers the
 * file's path.
 */
export function keepArtifact(name: string, contents: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = `${ARTIFACTS}${name}-${process.env.PLATFORM_TEST_BACKEND ?? 'files'}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`;
  writeFileSync(file, contents);
  return file;
}
