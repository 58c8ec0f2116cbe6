import { computed, onBeforeUnmount, reactive } from 'vue';
import type { DaemonStatus, DeadLetter, DeliveryRecord, StreamDelivery, Subscription, Workspace } from '../contract/types';
import { call, messageOf, urlOf } from './api';
import { overallState, throttled, useLiveStreams, workspaceOf, type LiveItem } from './live';
import { isAdmin } from './session';

/** A delivery that failed recently: its latest failed attempt, and whether it was retried, final, or delivered since. */
export interface Failure {
  deliveryId: string;
  eventId: string;
  /** Null where only the delivery record is known (it does not name the event key). */
  eventKey: string | null;
  workspaceId: string;
  extensionKey: string;
  /** When it failed, or when the console learnt of it from the stream. */
  at: string;
  outcome: 'retrying' | 'dead' | 'delivered';
  attempts: number;
  reason: string;
  nextAttemptAt: string | null;
}

/** A count read from a paged listing: `more` when it stopped at the page's end. */
export interface Count {
  count: number;
  more: boolean;
}

const FAILURES_SHOWN = 10;
/** A member's counts come from the delivery listing, one page of this many. */
const COUNT_UP_TO = 100;
/**
 * A member's overview follows at most this many workspace streams: a browser
 * opens 6 connections to one origin over HTTP/1.1, and each stream holds one
 * for as long as the page is open.
 */
export const LIVE_WORKSPACES = 3;
/** Figures are read again at most once a second, however busy the stream. */
const REREAD_MS = 1000;

const reasonOf = (error: string | undefined, httpStatus: number | null | undefined) =>
  error ?? (httpStatus ? `answered HTTP ${httpStatus}` : 'failed');

/** A failure shown whose delivery has now succeeded (after a retry or a replay) says so. */
export function withSuccess(list: readonly Failure[], deliveryId: string, attempts: number): Failure[] {
  return list.map((entry) => (entry.deliveryId === deliveryId ? { ...entry, outcome: 'delivered', attempts, reason: '' } : entry));
}

/** The list with this failure first, one entry per delivery, newest first, at most FAILURES_SHOWN. */
export function withFailure(list: readonly Failure[], failure: Failure): Failure[] {
  const others = list.filter((entry) => entry.deliveryId !== failure.deliveryId);
  return [failure, ...others].sort((a, b) => b.at.localeCompare(a.at)).slice(0, FAILURES_SHOWN);
}

export function failureFromStream(delivery: StreamDelivery, outcome: 'retrying' | 'dead', at: string): Failure {
  return {
    deliveryId: delivery.deliveryId,
    eventId: delivery.eventId,
    eventKey: delivery.eventKey,
    workspaceId: delivery.workspaceId,
    extensionKey: delivery.extensionKey,
    at,
    outcome,
    attempts: delivery.attempts,
    reason: reasonOf(delivery.error, delivery.httpStatus),
    nextAttemptAt: delivery.nextAttemptAt ?? null,
  };
}

export function failureFromDeadLetter(letter: DeadLetter): Failure {
  return {
    deliveryId: letter.deliveryId,
    eventId: letter.event.id,
    eventKey: letter.event.eventKey,
    workspaceId: letter.event.tenantId,
    extensionKey: letter.subscriber.extensionKey,
    at: letter.deadAt,
    outcome: 'dead',
    attempts: letter.attempts,
    reason: reasonOf(letter.lastError.message, letter.lastError.status),
    nextAttemptAt: null,
  };
}

/** A DEAD record's last attempt; null for one without attempts (dead before any, such as a deleted subscription's). */
export function failureFromRecord(record: DeliveryRecord): Failure | null {
  const last = record.attempts.at(-1);
  if (!last) return null;
  return {
    deliveryId: record.id,
    eventId: record.eventId,
    eventKey: null,
    workspaceId: record.workspaceId,
    extensionKey: record.extensionKey,
    at: record.completedAt ?? last.startedAt,
    outcome: 'dead',
    attempts: record.attempts.length,
    reason: reasonOf(last.error, last.httpStatus),
    nextAttemptAt: null,
  };
}

async function countDeliveries(workspaceId: string, status: 'PENDING' | 'DEAD') {
  const { data, meta } = await call('listDeliveries', { params: { id: workspaceId }, query: { status, limit: COUNT_UP_TO } });
  return { count: { count: data.length, more: typeof meta?.nextCursor === 'string' }, records: data };
}

/** Runs `task` for every item, at most `width` at once. */
async function eachBounded<T>(items: readonly T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

/**
 * The overview's figures, read once and then kept current from the live
 * streams. An ADMIN reads the daemon's totals (GET /api/admin/status) and
 * follows /api/admin/stream; a member counts in their own workspaces
 * (the delivery listing, up to COUNT_UP_TO) and follows the streams of the
 * first LIVE_WORKSPACES of them.
 */
export function useOverview() {
  const state = reactive({
    loading: true,
    error: null as string | null,
    /** A reread that failed after the first load; the figures shown are older. */
    staleError: null as string | null,
    status: null as DaemonStatus | null,
    workspaces: [] as Workspace[],
    counts: {} as Record<string, { pending: Count; dead: Count }>,
    failures: [] as Failure[],
    disabledIn: {} as Record<string, Subscription[]>,
  });

  const admin = isAdmin.value;
  const live = useLiveStreams({
    item: applyItem,
    // A reconnection may follow a gap: the browser replays the missed items, the figures are read again.
    open: () => (admin ? rereadStatus() : state.workspaces.forEach((workspace) => rereadCounts(workspace.id))),
  });
  const rereadStatus = throttled(() => void reread(async () => (state.status = (await call('getDaemonStatus')).data)), REREAD_MS);
  const countRereads = new Map<string, ReturnType<typeof throttled>>();
  const rereadCounts = (workspaceId: string) => {
    let reread = countRereads.get(workspaceId);
    if (!reread) countRereads.set(workspaceId, (reread = throttled(() => void readCounts(workspaceId), REREAD_MS)));
    reread();
  };
  onBeforeUnmount(() => {
    rereadStatus.cancel();
    for (const reread of countRereads.values()) reread.cancel();
  });

  async function reread(task: () => Promise<unknown>) {
    try {
      await task();
      state.staleError = null;
    } catch (error) {
      state.staleError = messageOf(error);
    }
  }

  async function readCounts(workspaceId: string) {
    await reread(async () => {
      const [pending, dead] = await Promise.all([countDeliveries(workspaceId, 'PENDING'), countDeliveries(workspaceId, 'DEAD')]);
      state.counts[workspaceId] = { pending: pending.count, dead: dead.count };
    });
  }

  async function readDisabled(workspaceId: string) {
    const { data: subscriptions } = await call('listSubscriptions', { params: { id: workspaceId } });
    state.disabledIn[workspaceId] = subscriptions.filter((subscription) => !subscription.enabled);
  }

  function applyItem(item: LiveItem) {
    const workspaceId = workspaceOf(item);
    if (item.type === 'delivery.retrying' || item.type === 'delivery.dead') {
      const outcome = item.type === 'delivery.dead' ? 'dead' : 'retrying';
      state.failures = withFailure(state.failures, failureFromStream(item.data, outcome, new Date().toISOString()));
    }
    if (item.type === 'delivery.succeeded') state.failures = withSuccess(state.failures, item.data.deliveryId, item.data.attempts);
    // Enabled or disabled, by hand or automatically.
    if (item.type === 'subscription.changed') return void reread(() => readDisabled(workspaceId));
    if (admin) rereadStatus();
    else rereadCounts(workspaceId);
  }

  async function load() {
    try {
      state.workspaces = (await call('listWorkspaces')).data;
      if (admin) {
        const [{ data: status }, { data: letters }] = await Promise.all([call('getDaemonStatus'), call('listDeadLetters', { query: { limit: FAILURES_SHOWN } })]);
        state.status = status;
        for (const letter of letters) state.failures = withFailure(state.failures, failureFromDeadLetter(letter));
      } else {
        await eachBounded(state.workspaces, 4, async (workspace) => {
          const [pending, dead] = await Promise.all([countDeliveries(workspace.id, 'PENDING'), countDeliveries(workspace.id, 'DEAD')]);
          state.counts[workspace.id] = { pending: pending.count, dead: dead.count };
          for (const record of dead.records.slice(0, FAILURES_SHOWN)) {
            const failure = failureFromRecord(record);
            if (failure) state.failures = withFailure(state.failures, failure);
          }
        });
      }
      await eachBounded(state.workspaces, 4, (workspace) => readDisabled(workspace.id));
    } catch (error) {
      state.error = messageOf(error);
      return;
    } finally {
      state.loading = false;
    }
    if (admin) live.open(urlOf('streamAllWorkspaces'));
    else for (const workspace of state.workspaces.slice(0, LIVE_WORKSPACES)) live.open(urlOf('streamWorkspace', { params: { id: workspace.id } }));
  }

  const disabled = computed(() => state.workspaces.flatMap((workspace) => state.disabledIn[workspace.id] ?? []));
  const liveState = computed(() => overallState(live.states));
  const workspaceName = (id: string) => state.workspaces.find((workspace) => workspace.id === id)?.name ?? id;

  void load();
  return { state, disabled, liveState, workspaceName };
}

export const countLabel = (count: Count) => `${count.count}${count.more ? '+' : ''}`;
