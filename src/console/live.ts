import { onBeforeUnmount, reactive } from 'vue';
import type { StreamDelivery, StreamEvent, StreamSubscription } from '../contract/types';

export type DeliveryItemType = 'delivery.succeeded' | 'delivery.retrying' | 'delivery.dead';
export type LiveItem =
  | { type: 'event.published'; data: StreamEvent }
  | { type: DeliveryItemType; data: StreamDelivery }
  | { type: 'subscription.changed'; data: StreamSubscription };

/** `live` while connected; `reconnecting` while the browser retries; `stopped` once it gave up (a refusal). */
export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'stopped';

const TYPES = ['event.published', 'delivery.succeeded', 'delivery.retrying', 'delivery.dead', 'subscription.changed'] as const;

/** The item's workspace: events name it `tenantId`, the others `workspaceId`. */
export const workspaceOf = (item: LiveItem) => (item.type === 'event.published' ? item.data.tenantId : item.data.workspaceId);

/**
 * Follows one stream with the browser's EventSource: same origin, so the
 * session cookie goes along, and a dropped connection is resumed with
 * Last-Event-ID by the browser itself.
 */
function follow(url: string, onItem: (item: LiveItem) => void, onState: (state: LiveState) => void): () => void {
  const source = new EventSource(url);
  onState('connecting');
  source.onopen = () => onState('live');
  source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'stopped' : 'reconnecting');
  for (const type of TYPES) {
    source.addEventListener(type, (message) => {
      let data: unknown;
      try {
        data = JSON.parse((message as MessageEvent<string>).data);
      } catch {
        return;
      }
      if (data && typeof data === 'object') onItem({ type, data } as LiveItem);
    });
  }
  return () => source.close();
}

/**
 * The live streams a page follows, closed when the page goes. `onOpen` runs
 * on every (re)connection, so that figures read before it are read again.
 */
export function useLiveStreams(handlers: { item(item: LiveItem): void; open?(url: string): void }) {
  const states = reactive<Record<string, LiveState>>({});
  const stops = new Map<string, () => void>();
  function open(url: string) {
    if (stops.has(url)) return;
    stops.set(
      url,
      follow(url, handlers.item, (state) => {
        const before = states[url];
        states[url] = state;
        if (state === 'live' && before !== 'connecting') handlers.open?.(url);
      }),
    );
  }
  onBeforeUnmount(() => {
    for (const stop of stops.values()) stop();
    stops.clear();
  });
  return { states, open };
}

/** One word for several streams: the worst of their states. */
export function overallState(states: Record<string, LiveState>): LiveState | null {
  const all = Object.values(states);
  if (all.length === 0) return null;
  for (const state of ['stopped', 'reconnecting', 'connecting'] as const) if (all.includes(state)) return state;
  return 'live';
}

export const liveLabel: Record<LiveState, string> = {
  connecting: 'Connecting to live updates…',
  live: 'Updated live',
  reconnecting: 'Live updates interrupted; reconnecting…',
  stopped: 'Live updates stopped; reload the page to resume them.',
};

/**
 * Runs `task` at most once per `ms`, and once after the last call of a burst:
 * a stream may bring hundreds of items a second, the page rereads once.
 */
export function throttled(task: () => void, ms: number) {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last = -Infinity;
  const run = () => {
    timer = null;
    last = performance.now();
    task();
  };
  const call = () => {
    // A run is already scheduled: it comes after this call and sees what it announced.
    if (timer) return;
    const wait = last + ms - performance.now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
  const cancel = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  return Object.assign(call, { cancel });
}
