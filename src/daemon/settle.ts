import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/**
 * Full garbage collections once the daemon is idle after a start or a burst
 * of work. Starting on a large data directory (indexes read, journals
 * replayed, pending deliveries scheduled) or taking a burst of publishes
 * allocates much at once: V8 grows its young generation to its maximum and
 * promotes some of that work's garbage, and gives both back only after a
 * full collection. A daemon that is idle once it has started never runs one;
 * after a burst V8's memory reducer runs one in its own time, which was once
 * more than 30 s after the daemon fell quiet.
 *
 * Two collections: V8 shrinks its young generation in a collection only if
 * little was allocated since the one before, and the first one's "since"
 * reaches back into the work. The second, `quietMs` later (5 s by default),
 * sees an idle daemon's few bytes.
 *
 * Each runs only at the end of a second in which the event loop was busy less
 * than IDLE_UTILIZATION of the time: a full collection stops everything for
 * 10-50 ms, which a busy daemon's requests would all wait for (a daemon taking
 * 2,000 publishes a second showed it as its worst latency), and a busy daemon
 * needs the room it grew. Until it is idle, it is asked again every second.
 * The first pair runs from `afterStartMs` after the start; later ones once
 * V8's heap and the buffers outside it (typed arrays: the index columns, a
 * checkpoint's copies of them) have grown `growthBytes` over their size after
 * the pair before: a dead buffer is freed only by a collection, which an idle
 * daemon does not otherwise run.
 *
 * Collecting takes node's `--expose-gc`, which `bin/platform` passes; a daemon
 * started another way skips it. See docs/decisions.md, "Memory the allocator
 * keeps".
 *
 * `collected` hears of each collection. Answers a function that stops it all.
 */
const CHECK_MS = 1_000;
const IDLE_UTILIZATION = 0.05;

export type SettleCause = 'start' | 'growth';

export interface SettleTimes {
  /** When the first pair after the start begins. */
  afterStartMs: number;
  /** How much V8's heap and its buffers outside it must grow over their size after a pair for another one. */
  growthBytes: number;
  /** Between the two collections of a pair. */
  quietMs: number;
}

export function settleWhenIdle({ afterStartMs, growthBytes, quietMs }: SettleTimes, collected: (cause: SettleCause) => void): () => void {
  const collect = globalThis.gc;
  if (!collect) return () => undefined;
  let timer: NodeJS.Timeout;
  const managedBytes = () => {
    const heap = getHeapStatistics();
    return heap.total_heap_size + heap.external_memory;
  };
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
  const settle = (afterMs: number, cause: SettleCause) =>
    whenIdle(afterMs, () => {
      collect();
      collected(cause);
      whenIdle(quietMs, () => {
        collect();
        collected(cause);
        watchGrowth(managedBytes() + growthBytes);
      });
    });
  /** Reading the sizes takes microseconds: once a second costs nothing measurable. */
  const watchGrowth = (limit: number) => {
    timer = setTimeout(() => (managedBytes() > limit ? settle(0, 'growth') : watchGrowth(limit)), CHECK_MS).unref();
  };
  settle(afterStartMs, 'start');
  return () => clearTimeout(timer);
}
