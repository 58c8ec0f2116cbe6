import { AppendLog } from '../store/append-log.js';
import type { Delivery } from './types.js';

import type { DeliveryAttempt, DeliveryRecord as PublicDeliveryRecord, DeliveryStatus } from '../../contract/types.js';

export type { DeliveryAttempt, DeliveryStatus } from '../../contract/types.js';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'SUCCEEDED', 'DEAD', 'DISCARDED'];

/** The delivery record of the contract, plus the event's key (deliveries are filtered by it; answers leave it out). */
export interface DeliveryRecord extends PublicDeliveryRecord {
  eventKey: string;
}

export const RESPONSE_EXCERPT_BYTES = 2048;

/** A record and its position in creation order (what cursors point at). */
interface Stored {
  seq: number;
  record: DeliveryRecord;
}

type Entry =
  | { t: 'new'; seq: number; record: DeliveryRecord }
  | { t: 'try'; id: string; attempt: DeliveryAttempt; nextAttemptAt: string | null }
  | { t: 'status'; id: string; status: DeliveryStatus; at: string };

export interface DeliveryQuery {
  status?: DeliveryStatus | undefined;
  subscriptionId?: string | undefined;
  eventKey?: string | undefined;
  /** Epoch ms, inclusive. */
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  /** Only records created before this position (from a cursor). */
  before?: number | undefined;
}

/** Compact once the journal holds this many entries more than there are records. */
const COMPACT_SLACK = 50_000;

/**
 * Every delivery's record, as a journal (deliveries.log), written in groups
 * without the publisher waiting: until a record is on disk its delivery stays
 * in the (durable) outbox, which rebuilds it after a crash. Attempts and status
 * changes are journalled the same way, so a crash loses at most the last
 * attempt results, never a record.
 * Records stay until retention removes their event.
 */
export class DeliveryRecords {
  private readonly byId = new Map<string, Stored>();
  /** Per workspace, in creation order. */
  private readonly byWorkspace = new Map<string, Stored[]>();
  private nextSeq = 1;
  private entries = 0;
  /** Records handed to the journal and not yet on disk. */
  private readonly unsynced = new Map<string, Promise<void>>();

  private constructor(
    private readonly log: AppendLog<Entry>,
    private readonly reportError: (error: unknown) => void,
    private readonly recording: boolean,
  ) {}

  /** `recording` false (the bench's comparison only) keeps no new record. */
  static async open(file: string, reportError: (error: unknown) => void, recording = true): Promise<DeliveryRecords> {
    const replayed: Entry[] = [];
    const log = await AppendLog.open<Entry>(file, (entry) => replayed.push(entry));
    const records = new DeliveryRecords(log, reportError, recording);
    for (const entry of replayed) records.apply(entry);
    records.entries = replayed.length;
    return records;
  }

  get size(): number {
    return this.byId.size;
  }

  get(id: string): DeliveryRecord | undefined {
    return this.byId.get(id)?.record;
  }

  /**
   * Records new deliveries: in memory at once, on disk with the next group
   * write. The publisher need not wait for it: the outbox holds each delivery
   * durably until `durable` resolved, and after a crash a pending delivery
   * without a record gets one again (`reconcile`).
   */
  created(deliveries: readonly Delivery[]): void {
    if (!this.recording) return;
    for (const delivery of deliveries) {
      const entry: Entry = { t: 'new', seq: this.nextSeq++, record: recordOf(delivery) };
      this.entries += 1;
      this.apply(entry);
      const written = this.log.append(entry).then(() => undefined, this.reportError);
      this.unsynced.set(delivery.id, written);
      void written.then(() => {
        if (this.unsynced.get(delivery.id) === written) this.unsynced.delete(delivery.id);
      });
    }
  }

  /** Resolves once the delivery's record is on disk (or its write failed, which is reported): only then may the outbox forget it. */
  async durable(id: string): Promise<void> {
    await this.unsynced.get(id);
  }

  /** One attempt's result; `nextAttemptAt` when it is retried. */
  attempted(id: string, attempt: DeliveryAttempt, nextAttemptAt: number | null, status: DeliveryStatus): void {
    if (!this.byId.has(id)) return;
    this.journal({ t: 'try', id, attempt, nextAttemptAt: nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString() });
    if (status !== 'PENDING') {
      const at = new Date(Date.parse(attempt.startedAt) + attempt.durationMs).toISOString();
      this.journal({ t: 'status', id, status, at });
    }
  }

  /** Dead-lettered without an attempt (its subscriber is gone), replayed or discarded. */
  moved(id: string, status: DeliveryStatus, at: number): void {
    if (!this.byId.has(id)) return;
    this.journal({ t: 'status', id, status, at: new Date(at).toISOString() });
  }

  /** Durable variant of `moved`, for moves the caller answers about (replay, discard). */
  async movedDurably(ids: readonly string[], status: DeliveryStatus, at: number): Promise<void> {
    const entries = ids.filter((id) => this.byId.has(id)).map((id): Entry => ({ t: 'status', id, status, at: new Date(at).toISOString() }));
    this.entries += entries.length;
    await Promise.all(entries.map((entry) => this.log.append(entry)));
    for (const entry of entries) this.apply(entry);
  }

  /**
   * After a crash: a pending delivery whose record was not yet on disk gets
   * one again; a PENDING record whose delivery left the outbox before its
   * status was journalled is DEAD if a dead letter holds it, else SUCCEEDED.
   */
  reconcile(pending: Iterable<Delivery>, isDead: (id: string) => boolean, now: number): void {
    const pendingIds = new Set<string>();
    for (const delivery of pending) {
      pendingIds.add(delivery.id);
      if (!this.byId.has(delivery.id)) this.created([delivery]);
    }
    for (const { record } of this.byId.values()) {
      if (record.status !== 'PENDING' || pendingIds.has(record.id)) continue;
      this.moved(record.id, isDead(record.id) ? 'DEAD' : 'SUCCEEDED', now);
    }
  }

  /** Records of one event, oldest first. */
  ofEvent(workspaceId: string, eventId: string): DeliveryRecord[] {
    return (this.byWorkspace.get(workspaceId) ?? []).filter((stored) => stored.record.eventId === eventId).map((s) => s.record);
  }

  /** Newest first; `lastSeq` is the position of the last item returned, for the next cursor. */
  list(workspaceId: string, query: DeliveryQuery): { items: DeliveryRecord[]; lastSeq: number | null; more: boolean } {
    const all = this.byWorkspace.get(workspaceId) ?? [];
    let index = query.before === undefined ? all.length - 1 : firstBelow(all, query.before);
    const items: DeliveryRecord[] = [];
    let lastSeq: number | null = null;
    for (; index >= 0; index -= 1) {
      const { seq, record } = all[index]!;
      if (!matches(record, query)) continue;
      if (items.length === query.limit) return { items, lastSeq, more: true };
      items.push(record);
      lastSeq = seq;
    }
    return { items, lastSeq, more: false };
  }

  /** Retention removed these events: their records go too, and the journal is rewritten without them. */
  async removeEvents(eventIds: ReadonlySet<string>): Promise<number> {
    if (eventIds.size === 0) return 0;
    let removed = 0;
    for (const [workspaceId, list] of this.byWorkspace) {
      const kept = list.filter((stored) => !eventIds.has(stored.record.eventId));
      if (kept.length === list.length) continue;
      for (const stored of list) if (eventIds.has(stored.record.eventId)) this.byId.delete(stored.record.id);
      removed += list.length - kept.length;
      if (kept.length === 0) this.byWorkspace.delete(workspaceId);
      else this.byWorkspace.set(workspaceId, kept);
    }
    if (removed > 0) await this.compact();
    return removed;
  }

  /** A deleted workspace's records. */
  async removeWorkspace(workspaceId: string): Promise<void> {
    const list = this.byWorkspace.get(workspaceId);
    if (!list) return;
    for (const stored of list) this.byId.delete(stored.record.id);
    this.byWorkspace.delete(workspaceId);
    await this.compact();
  }

  async close(): Promise<void> {
    await this.log.close();
  }

  private async compact(): Promise<void> {
    const snapshot = [...this.byId.values()].sort((a, b) => a.seq - b.seq).map(({ seq, record }): Entry => ({ t: 'new', seq, record }));
    this.entries = snapshot.length;
    await this.log.rewrite(snapshot);
  }

  private journal(entry: Entry): void {
    this.entries += 1;
    this.apply(entry);
    this.log.appendLazily(entry, this.reportError);
    if (this.entries > this.byId.size * 4 + COMPACT_SLACK) this.compact().catch(this.reportError);
  }

  private apply(entry: Entry): void {
    if (entry.t === 'new') {
      if (this.byId.has(entry.record.id)) return;
      const stored = { seq: entry.seq, record: entry.record };
      this.byId.set(entry.record.id, stored);
      let list = this.byWorkspace.get(entry.record.workspaceId);
      if (!list) this.byWorkspace.set(entry.record.workspaceId, (list = []));
      list.push(stored);
      this.nextSeq = Math.max(this.nextSeq, entry.seq + 1);
      return;
    }
    const record = this.byId.get(entry.id)?.record;
    if (!record) return;
    if (entry.t === 'try') {
      if (record.attempts.some((attempt) => attempt.number === entry.attempt.number)) return;
      record.attempts.push(entry.attempt);
      if (entry.nextAttemptAt === null) delete record.nextAttemptAt;
      else record.nextAttemptAt = entry.nextAttemptAt;
      return;
    }
    record.status = entry.status;
    if (entry.status === 'PENDING') {
      delete record.completedAt;
      record.nextAttemptAt = entry.at;
    } else {
      record.completedAt = entry.at;
      delete record.nextAttemptAt;
    }
  }
}

function recordOf(delivery: Delivery): DeliveryRecord {
  return {
    id: delivery.id,
    eventId: delivery.event.id,
    eventKey: delivery.event.eventKey,
    workspaceId: delivery.event.tenantId,
    subscriptionId: delivery.subscriber.subscriptionId,
    extensionKey: delivery.subscriber.extensionKey,
    kind: delivery.subscriber.kind,
    status: 'PENDING',
    attempts: [],
    nextAttemptAt: new Date(delivery.nextAttemptAt).toISOString(),
    createdAt: delivery.enqueuedAt,
  };
}

/** The index of the last stored record created before `seq` (-1 if none). */
function firstBelow(list: readonly Stored[], seq: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (list[middle]!.seq < seq) low = middle + 1;
    else high = middle;
  }
  return low - 1;
}

function matches(record: DeliveryRecord, query: DeliveryQuery): boolean {
  if (query.status !== undefined && record.status !== query.status) return false;
  if (query.subscriptionId !== undefined && record.subscriptionId !== query.subscriptionId) return false;
  if (query.eventKey !== undefined && record.eventKey !== query.eventKey) return false;
  if (query.since !== undefined || query.until !== undefined) {
    const created = Date.parse(record.createdAt);
    if (query.since !== undefined && created < query.since) return false;
    if (query.until !== undefined && created > query.until) return false;
  }
  return true;
}
