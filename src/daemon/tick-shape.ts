import { createHook } from 'node:async_hooks';

let kept: object | undefined;

/**
 * Holds one of Node's `process.nextTick` queue entries for the life of the
 * process, so that the hidden classes V8 gives these entries are never freed.
 *
 * Why: V8 holds those hidden classes only weakly. A major GC while the daemon
 * is idle and no tick is queued (V8's memory reducer starts one a few seconds
 * after activity stops) frees them, and the next tick builds new ones. The inline
 * cache of nextTick's object literal then meets a second hidden class, turns
 * megamorphic for good, and every nextTick (several per request) takes V8's
 * slow runtime path. Measured in the bench: `/api/health` went from 18 to
 * 23 µs of CPU per request after ten idle seconds, and the catalog detail GET
 * on PostgreSQL, whose daemon idles between its pool's and activity log's
 * timers, stayed 20 % slower than on files. A held entry holds its hidden
 * class and, through its back pointers, the chain before it.
 */
export function keepTickShapeAlive(): void {
  if (kept) return;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') kept ??= resource;
    },
  }).enable();
  process.nextTick(() => undefined);
  hook.disable();
}
