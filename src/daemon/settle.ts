/**
 * Full garbage collections once start-up is over. Starting on a large data
 * directory (indexes read, journals replayed, pending deliveries scheduled)
 * allocates much at once: V8 grows its young generation to its maximum and
 * promotes some of the start's buffers, and gives both back only after a
 * full collection. A daemon that is idle once it has started never runs one,
 * so it would hold that memory until its first burst of work.
 *
 * Two collections: V8 shrinks its young generation in a collection only if
 * little was allocated since the one before, and the first one's "since"
 * reaches back into the start. The second, QUIET_MS later, sees an idle
 * daemon's few bytes (or a busy one's many, and rightly keeps the room).
 * Collecting takes node's `--expose-gc`, which `bin/platform` passes; a daemon
 * started another way skips it. See docs/decisions.md, "Memory the allocator
 * keeps".
 *
 * Answers a function that cancels what has not run yet.
 */
const QUIET_MS = 5_000;

export function settleAfterStart(delayMs: number): () => void {
  const collect = globalThis.gc;
  if (!collect) return () => undefined;
  let timer = setTimeout(() => {
    collect();
    timer = setTimeout(() => collect(), QUIET_MS).unref();
  }, delayMs).unref();
  return () => clearTimeout(timer);
}
