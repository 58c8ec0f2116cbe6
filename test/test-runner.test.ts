import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { filesOnly } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';

// dev/uvu.mjs, which runs every pass of `npm test`: a test process that something keeps
// open after its last test must fail and say what, not hang until CI's limit.

const run = promisify(execFile);
const RUNNER = new URL('../dev/uvu.mjs', import.meta.url).pathname;

/** Runs the test files of `files` (name → source) through the runner, with a 1 s limit to end. */
async function runSuites(files: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const dir = await tempDir('platform-runner-');
  for (const [name, source] of Object.entries(files)) await writeFile(join(dir, name), source);
  try {
    const { stderr } = await run(process.execPath, [RUNNER, dir, '\\.test\\.mjs$'], { env: { ...process.env, TEST_END_WITHIN_MS: '1000' }, timeout: 20_000 });
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code: number; stderr: string; killed?: boolean };
    assert.not.ok(failed.killed, 'the runner ended by itself');
    return { code: failed.code, stderr: failed.stderr };
  }
}

filesOnly(test)('a test process kept open after its last test fails and names what holds it (files pass only: no daemon involved)', async () => {
  const leaks = `
    import { connect, createServer } from 'node:net';
    const server = createServer(() => undefined).listen(0, '127.0.0.1', () => connect(server.address().port, '127.0.0.1'));
    server.unref();
  `;
  const { code, stderr } = await runSuites({ 'leaks.test.mjs': leaks });
  assert.is(code, 1);
  assert.match(stderr, /still running 1 s after its last test, kept open by: .*Socket to 127\.0\.0\.1:\d+/);
});

filesOnly(test)('a test process that holds nothing ends by itself, passed (files pass only: no daemon involved)', async () => {
  const { code, stderr } = await runSuites({ 'clean.test.mjs': `import { setTimeout } from 'node:timers/promises'; await setTimeout(10);` });
  assert.is(code, 0);
  assert.not.match(stderr, /still running/);
});

test.run();
