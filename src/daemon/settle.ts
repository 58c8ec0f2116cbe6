import { performance } from 'node:perf_hooks';

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
 * daemon's few bytes.
 *
 * Each runs only at the end of a second in which the event loop was busy less
 * than IDLE_UTILIZATION of the time: a full collection stops everything for
 * 10-50 ms, which a busy daemon's requests would all wait for (a daemon taking
 * 2,000 publishes a second showed it as its worst latency), and a busy daemon
 * needs the room it grew. Until it is idle, it is asked again every second.
 *
 * Collecting takes node's `--expose-gc`, which `bin/platform` passes; a daemon
 * started another way skips it. See docs/decisions.md, "Memory the allocator
 * keeps".
 *
 * `collected` hears of each collection. Answers a function that cancels what
 * has not run yet.
 */
const QUIET_MS = 5_000;
const CHECK_MS = 1_000;
const IDLE_UTILIZATION = 0.05;

export function settleAfterStart(delayMs: number, collected: () => void): () => void {
  const collect = globalThis.gc;
  if (!collect) return () => undefined;
  let timer: NodeJS.Timeout;
  /** From `afterMs` on, the end of the first idle second runs `then`. */
  const whenIdle = (afterMs: number, then: () => void) => {
    timer = setTimeout(() => {
      let since = performance.eventLoopUtilization();
      const check = () => {
        const now = performance.eventLoopUtilization();
        if (performance.eventLoopUtilization(now, since).utilization < IDLE_UTILIZATION) return then();
        since = now;
        timer = setTimeout(check, CHECK_MS).unref();
      };
      timer = setTimeout(check, CHECK_MS).unref();
    }, afterMs).unref();
  };
  whenIdle(delayMs, () => {
    collect();
    collected();
    whenIdle(QUIET_MS, () => {
      collect();
      collected();
    });
  });
  return () => clearTimeout(timer);
}
