import { join } from 'node:path';
import type { PlatformEvent } from '../../handlers/sdk.js';
import type { Delivery, DeliveryRecord, StoredDeadLetter } from '../dispatch/types.js';
import { replayEventLog } from './file/event-log.js';
import { openDeliveryFiles } from './file/dispatch.js';
import type { Copied, ImportTarget } from './import-step.js';
import { continueDeliverySequence, insertDeliveries, insertEvents, insertEventsOfDeliveries } from './postgres/import-rows.js';
import type { ImportedDeliveryRow } from './postgres/rows.js';

/**
 * The events domain's steps of `platform db import`. The event log can be
 * any size: it is read as it streams by and written in batches, never held.
 * Deliveries are read through the files a daemon start opens (the outbox is
 * held in memory there anyway, the records and dead letters as indexes of a
 * few dozen bytes each; the dead letters are gathered whole here, to match
 * them to their records) and written in batches too.
 */

/** Events gathered before they are written: at most this many, or this many bytes of JSON (a payload may be 256 KiB), plus one read chunk. */
const EVENTS_AT_ONCE = 1_000;
const EVENT_BYTES_AT_ONCE = 8 * 1024 * 1024;
const DELIVERIES_AT_ONCE = 1_000;

/** Oldest first, so that each workspace's events keep their order, and cursors (which find their event by id) page on as they did. */
export async function copyEventLog(dataDir: string, { tx }: ImportTarget): Promise<Copied[]> {
  let gathered: PlatformEvent[] = [];
  let bytes = 0;
  let copied = 0;
  const write = async () => {
    const events = gathered;
    gathered = [];
    bytes = 0;
    await insertEvents(tx, events);
    copied += events.length;
  };
  await replayEventLog(
    join(dataDir, 'events'),
    (event, span) => {
      gathered.push(event);
      bytes += span.length;
    },
    async () => {
      if (gathered.length >= EVENTS_AT_ONCE || bytes >= EVENT_BYTES_AT_ONCE) await write();
    },
  );
  await write();
  return [{ kind: 'events', count: copied }];
}

/**
 * Every delivery as one row (see decisions: "Events and dispatch on
 * PostgreSQL"): its record, with what the outbox holds of it while it is
 * pending (due time, attempts of this run, replay count) or what its dead
 * letter holds once it is one. Pending deliveries go in unleased, for any
 * daemon to claim when due; dead letters stay replayable. Call after the
 * event log is copied. The event of a pending delivery or a dead letter that
 * retention removed from the log is copied from the delivery's own copy; a
 * finished delivery whose event is gone is left out.
 */
export async function copyDeliveries(dataDir: string, { tx }: ImportTarget): Promise<Copied[]> {
  // What reconciling the records writes is a repair the next start of a file daemon makes again.
  const { outbox, letters, records } = await openDeliveryFiles(dataDir, () => undefined);
  try {
    const queued = new Map<string, Delivery>();
    for (const delivery of outbox.values()) {
      // Two runs of one delivery (a stop left the dead run in the outbox, then it was replayed): its record follows the later one.
      const other = queued.get(delivery.id);
      if (!other || other.replayCount < delivery.replayCount) queued.set(delivery.id, delivery);
    }
    const lettersByDelivery = new Map<string, StoredDeadLetter>();
    for (const letter of letters.all()) lettersByDelivery.set(letter.deliveryId, letter);
    const eventsOfQueued = await Promise.all([...queued.values()].map(({ event }) => event.object()));
    const keptForDeliveries = await insertEventsOfDeliveries(tx, [...eventsOfQueued, ...[...lettersByDelivery.values()].map(({ event }) => event)]);
    const totals = { records: 0, pending: 0, dead: 0, attempts: 0, leftOut: 0 };
    let rows: ImportedDeliveryRow[] = [];
    const write = async () => {
      const inserted = await insertDeliveries(tx, rows);
      rows = [];
      for (const key of Object.keys(totals) as Array<keyof typeof totals>) totals[key] += inserted[key];
    };
    let lastSeq = 0;
    for (const { seq, record } of records.all()) {
      rows.push(rowOfRecord(seq, record, queued.get(record.id), lettersByDelivery.get(record.id)));
      // A delivery still in the outbox whose record is finished was delivered; the outbox had not yet forgotten it.
      queued.delete(record.id);
      lettersByDelivery.delete(record.id);
      lastSeq = Math.max(lastSeq, seq);
      if (rows.length >= DELIVERIES_AT_ONCE) await write();
    }
    // A dead letter outlives its record, which retention removes with the event: the letter alone, numbered after the records.
    for (const letter of lettersByDelivery.values()) rows.push(rowOfLetter((lastSeq += 1), letter));
    await write();
    await continueDeliverySequence(tx);
    return [
      ...(keptForDeliveries > 0 ? [{ kind: 'events gone from the log, kept for their pending deliveries and dead letters', count: keptForDeliveries }] : []),
      { kind: 'delivery records', count: totals.records },
      { kind: 'delivery attempts', count: totals.attempts },
      { kind: 'pending deliveries', count: totals.pending },
      { kind: 'dead letters', count: totals.dead },
      ...(totals.leftOut > 0 ? [{ kind: 'deliveries of events no longer kept (left out)', count: totals.leftOut }] : []),
    ];
  } finally {
    await outbox.close();
    await letters.close();
    await records.close();
  }
}

function rowOfRecord(seq: number, record: DeliveryRecord, queued: Delivery | undefined, letter: StoredDeadLetter | undefined): ImportedDeliveryRow {
  const recorded = {
    seq,
    id: record.id,
    workspace_id: record.workspaceId,
    event_id: record.eventId,
    event_key: record.eventKey,
    subscription_id: record.subscriptionId,
    extension_key: record.extensionKey,
    kind: record.kind,
    created_at: record.createdAt,
    attempt_count: record.attempts.at(-1)?.number ?? 0,
    attempts: record.attempts,
    redelivery_of: record.redeliveryOf ?? null,
  };
  if (record.status === 'PENDING') {
    // Reconciling at open moved every PENDING record whose delivery left the outbox.
    if (!queued) throw new Error(`delivery ${record.id} is PENDING in deliveries.log but not in outbox.log`);
    return {
      ...recorded,
      status: 'PENDING',
      service_base_url: queued.subscriber.serviceBaseUrl,
      depth: queued.depth,
      run_attempts: queued.attempts,
      replay_count: queued.replayCount,
      due_at: new Date(queued.nextAttemptAt).toISOString(),
      enqueued_at: queued.enqueuedAt,
      completed_at: null,
      first_attempt_at: queued.firstAttemptAt,
      last_error: queued.lastError,
      dead_letter_id: queued.deadLetterId ?? null,
      dead_at: null,
    };
  }
  if (record.status === 'DEAD' && letter) return { ...recorded, ...deadColumns(letter), completed_at: record.completedAt ?? letter.deadAt };
  const finishedAt = record.completedAt ?? record.createdAt;
  return {
    ...recorded,
    // DEAD without its letter: a discard removes the letter before it marks the record, and stopped in between.
    status: record.status === 'SUCCEEDED' ? 'SUCCEEDED' : 'DISCARDED',
    service_base_url: null,
    // Read only when a dead letter is replayed, which a finished delivery never is.
    depth: 1,
    run_attempts: record.attempts.length,
    replay_count: 0,
    due_at: finishedAt,
    enqueued_at: record.createdAt,
    completed_at: finishedAt,
    first_attempt_at: record.attempts[0]?.startedAt ?? null,
    last_error: null,
    dead_letter_id: null,
    dead_at: null,
  };
}

/** A dead letter's own columns: what a replay and the dead-letter listings read. */
function deadColumns(letter: StoredDeadLetter) {
  return {
    status: 'DEAD' as const,
    service_base_url: letter.subscriber.serviceBaseUrl,
    depth: letter.depth,
    run_attempts: letter.attempts,
    replay_count: letter.replayCount,
    due_at: letter.deadAt,
    enqueued_at: letter.firstAttemptAt ?? letter.deadAt,
    first_attempt_at: letter.firstAttemptAt,
    last_error: letter.lastError,
    dead_letter_id: letter.id,
    dead_at: letter.deadAt,
  };
}

function rowOfLetter(seq: number, letter: StoredDeadLetter): ImportedDeliveryRow {
  return {
    seq,
    id: letter.deliveryId,
    workspace_id: letter.event.tenantId,
    event_id: letter.event.id,
    event_key: letter.event.eventKey,
    subscription_id: letter.subscriber.subscriptionId,
    extension_key: letter.subscriber.extensionKey,
    kind: letter.subscriber.kind,
    created_at: letter.firstAttemptAt ?? letter.deadAt,
    attempt_count: 0,
    attempts: [],
    // A letter without its record: whether it was a redelivery was on the record only.
    redelivery_of: null,
    ...deadColumns(letter),
    completed_at: letter.deadAt,
  };
}
