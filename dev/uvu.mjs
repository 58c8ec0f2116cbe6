// uvu's command line as dev/test-backends.sh uses it (`DIR PATTERN [--ignore PATTERN]`),
// with one thing more: a test process that something left open keeps alive after its
// last test says so and ends, failed, instead of hanging until CI's time runs out.
// (Once the last test is over, the process ends by itself when nothing holds it: the
// PostgreSQL pass stops its cluster on 'beforeExit'.)
import { parse } from 'uvu/parse';
import { run } from 'uvu/run';

/**
 * How long the process may take to end after its last test: stopping the test cluster takes a
 * second or two. TEST_END_WITHIN_MS sets it (the runner's own test makes it short).
 */
const END_WITHIN_MS = Number(process.env.TEST_END_WITHIN_MS ?? 30_000);

const [dir, pattern, ...options] = process.argv.slice(2);
const ignoreAt = options.indexOf('--ignore');
const unknown = options.filter((option, index) => index !== ignoreAt && index !== ignoreAt + 1);
if (!dir || !pattern || unknown.length > 0) {
  console.error(`usage: dev/uvu.mjs DIR PATTERN [--ignore PATTERN]${unknown.length > 0 ? ` (not understood: ${unknown.join(' ')})` : ''}`);
  process.exit(2);
}
const { suites } = await parse(dir, pattern, { ignore: ignoreAt === -1 ? undefined : options[ignoreAt + 1] });
await run(suites, {});

setTimeout(() => {
  // What keeps it alive, sockets with their peer, so that the log says what to look for.
  const stdio = [process.stdin, process.stdout, process.stderr];
  const open = process._getActiveHandles().filter((handle) => !stdio.includes(handle)).map((handle) =>
    handle.remotePort === undefined ? handle.constructor.name : `${handle.constructor.name} to ${handle.remoteAddress}:${handle.remotePort}`,
  );
  console.error(`the test process was still running ${END_WITHIN_MS / 1000} s after its last test, kept open by: ${open.join(', ') || 'nothing visible'}`);
  process.exit(1);
}, END_WITHIN_MS).unref();
