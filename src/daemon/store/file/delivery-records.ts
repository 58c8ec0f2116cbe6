import { closeSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { AppendLog, type LineSpan } from '../append-log.js';
import { BLOCK_SIZE, Column, FingerprintTable, Swap, SWAP_CACHE_BYTES, hash32, hash32b, readLineAt } from '../line-index.js';
import {
  CheckpointSchedule,
  columnValues,
  indexFileOf,
  journalMarkAt,
  readJournalCheckpoint,
  restoreColumns,
  writeIndexFileInTurns,
  type IndexColumn,
  type IndexReader,
  type JournalMark,
} from '../index-file.js';
import { unbounded } from '../../paging.js';
import { countDelivery, noDeliveries, type DeliverySummary } from '../../events/delivery-summary.js';
import type { NewAttempt } from '../../dispatch/store.js';
import type { Delivery, DeliveryAttempt, DeliveryQuery, DeliveryRecord, DeliveryStatus } from '../../dispatch/types.js';

/**
 * The journal's lines. `new` and `state` hold a whole record (`new` creates
 * it, `state` replaces it: the last one wins), so that every record, PENDING
 * ones too, is one line, found by its offset: each attempt of a PENDING record
 * writes its whole state again. `try` (an attempt) and `status` lines were
 * written by earlier versions; they are read, and rewritten away at the start.
 */
type Entry =
  | { t: 'new'; seq: number; record: DeliveryRecord }
  | { t: 'state'; seq: number; record: DeliveryRecord }
  | { t: 'try'; id: string; attempt: DeliveryAttempt; nextAttemptAt: string | null }
  | { t: 'status'; id: string; status: DeliveryStatus; at: string };

/** A pending delivery as reconciling at the start takes it (see DeliveryRecords.reconcile): `ref` loads it. */
export interface PendingFingerprint<T> {
  /** hash32 and hash32b of its id. */
  idHash: number;
  check: number;
  workspaceId: string;
  ref: T;
}

/** What the index takes from a record. */
type RecordHead = Pick<DeliveryRecord, 'id' | 'eventId' | 'eventKey' | 'workspaceId' | 'subscriptionId' | 'status' | 'createdAt'>;

/** An entry as start-up reads it: a record's line gives only what the index takes. */
type ReplayedEntry = Exclude<Entry, { record: DeliveryRecord }> | { t: 'new' | 'state'; seq: number; record: RecordHead };

/**
 * `{"t":"new"|"state","seq":N,"record":{"id":…,"eventId":…,"eventKey":…,"workspaceId":…,["subscriptionId":…,]"extensionKey":…,"kind":…,"status":…,`
 * as JSON.stringify writes a record (see recordOf and recordIn); the event key may have escaped characters, no other field here.
 */
const RECORD_HEAD =
  /^\{"t":"(new|state)","seq":(\d+),"record":\{"id":"([^"\\]*)","eventId":"([^"\\]*)","eventKey":"((?:[^"\\]|\\.)*)","workspaceId":"([^"\\]*)",(?:"subscriptionId":(?:"([^"\\]*)"|null),)?"extensionKey":"(?:[^"\\]|\\.)*","kind":"[A-Z_]+","status":"([A-Z]+)",/;
const CREATED_AT = Buffer.from('"createdAt":"');
/** How far into a line its head is looked for, and from its end its createdAt (only completedAt may follow). */
const HEAD_BYTES = 1024;
const TAIL_BYTES = 128;

/**
 * An entry of the journal, a record's line read for its head and its
 * createdAt only (its attempts are not parsed): `"createdAt":"` cannot occur
 * unescaped inside a string, so its last occurrence is the field. A line in
 * any other shape is parsed whole.
 */
function replayedEntry(line: Buffer): ReplayedEntry {
  const head = RECORD_HEAD.exec(line.toString('utf8', 0, Math.min(line.length, HEAD_BYTES)));
  const at = head ? line.lastIndexOf(CREATED_AT) : -1;
  if (head && at >= line.length - TAIL_BYTES) {
    const start = at + CREATED_AT.length;
    return {
      t: head[1] as 'new' | 'state',
      seq: Number(head[2]),
      record: {
        id: head[3]!,
        eventId: head[4]!,
        eventKey: head[5]!.includes('\\') ? (JSON.parse(`"${head[5]!}"`) as string) : head[5]!,
        workspaceId: head[6]!,
        subscriptionId: head[7] ?? null,
        status: head[8] as DeliveryStatus,
        createdAt: line.toString('utf8', start, line.indexOf(0x22, start)),
      },
    };
  }
  return JSON.parse(line.toString('utf8')) as Entry;
}

/** What deliveries.idx holds besides the columns (see DeliveryRecords.writeIndex). */
interface IndexHeader extends JournalMark {
  version: number;
  entries: number;
  count: number;
  nextSeq: number;
  /** Ordinals given so far (those of removed workspaces stay unused). */
  ordinals: number;
  workspaces: Array<{ id: string; ordinal: number; length: number }>;
  tracked: number;
}

const INDEX_VERSION = 1;
/** Bytes of a record's columns (see WorkspaceRecords), and of a PENDING or DEAD one's entry in `tracked`. */
const INDEX_BYTES_PER_RECORD = 8 + 4 + 1 + 4 + 4 + 4 + 4 + 8;
const INDEX_BYTES_PER_TRACKED = 4 + 8 + 4 + 4;

/** Compact once the journal holds this many entries more than there are records. */
const COMPACT_SLACK = 50_000;
/** Journal bytes between two checkpoints (see DeliveryRecords.checkpoint), unless told otherwise. */
const CHECKPOINT_BYTES = 256 * 1024 * 1024;
/**
 * How long new records wait for their first line, written together: a
 * delivery that ends meanwhile (most do) is written once, finished, instead of
 * as `new` and then `state`, and the journal costs a few fsyncs a second, not
 * one per group of publishes. Waiting longer also holds each finished record,
 * with its attempt's request and answer headers, in memory longer, and what
 * the garbage collector then does with them came to cost more than the lines
 * it saves (bench 10a, the rate with records against without: 83-85 % at
 * 100 ms, 91 % at 30 and 50 ms, 89 % at 10 ms in runs of that group alone,
 * though one full run later gave 81 % at 50 ms; before attempts kept their
 * headers, 97 % at 100 ms and 88 % at 20 ms). A crash loses at most this
 * much of attempt results: those deliveries are still in the outbox, and run
 * again.
 */
const FIRST_LINE_DELAY_MS = 50;
/**
 * How long first lines whose write failed (a full disk) wait to be written
 * again, with those created meanwhile. Their deliveries stay in the outbox.
 */
const FIRST_LINE_RETRY_MS = 1000;

const STATUS_CODES: Record<DeliveryStatus, number> = { PENDING: 0, SUCCEEDED: 1, DEAD: 2, DISCARDED: 3 };
/** Where a record's line is not known yet: it is held whole meanwhile. */
const NO_LINE = -1;

/**
 * One workspace's records in creation order, as columns: creation sequence,
 * creation second, status, fingerprints of the subscription, event key, event
 * id and the delivery's own id, and the byte offset of the record's line in
 * the journal: 37 bytes
 * a record, in the swap but for each column's newest block (65,536 records),
 * where most changes land. What the columns only narrow down (fingerprints,
 * the second) is confirmed on the record.
 */
class WorkspaceRecords {
  length = 0;
  readonly seqs: Column;
  readonly createdSeconds: Column;
  readonly statuses: Column;
  readonly subscriptionHashes: Column;
  readonly eventKeyHashes: Column;
  readonly eventIdHashes: Column;
  readonly idHashes: Column;
  readonly offsets: Column;
  private readonly columns: Column[];

  /** `ordinal`: its number in the index of PENDING and DEAD records by id (see DeliveryRecords.tracked). */
  constructor(
    readonly ordinal: number,
    swap: Swap,
  ) {
    this.seqs = new Column(Float64Array, swap);
    this.createdSeconds = new Column(Uint32Array, swap);
    this.statuses = new Column(Uint8Array, swap);
    this.subscriptionHashes = new Column(Uint32Array, swap);
    this.eventKeyHashes = new Column(Uint32Array, swap);
    this.eventIdHashes = new Column(Uint32Array, swap);
    this.idHashes = new Column(Uint32Array, swap);
    this.offsets = new Column(Float64Array, swap);
    this.columns = [this.seqs, this.createdSeconds, this.statuses, this.subscriptionHashes, this.eventKeyHashes, this.eventIdHashes, this.idHashes, this.offsets];
  }

  /** The columns' values, in the order `restore` takes them (for the index a clean stop writes). */
  columnsOut(): IndexColumn[] {
    return columnValues(this.columns, this.length);
  }

  /** Fills these empty columns from an index (see columnsOut). */
  restore(length: number, take: IndexReader<unknown>['take']): void {
    this.length = length;
    restoreColumns(take, this.columns, length);
  }

  push(seq: number, record: RecordHead, span: LineSpan | null): void {
    const index = this.makeRoomFor(seq);
    this.seqs.set(index, seq);
    this.createdSeconds.set(index, Math.floor(Date.parse(record.createdAt) / 1000));
    this.statuses.set(index, STATUS_CODES[record.status]);
    this.subscriptionHashes.set(index, hash32(record.subscriptionId ?? ''));
    this.eventKeyHashes.set(index, hash32(record.eventKey));
    this.eventIdHashes.set(index, hash32(record.eventId));
    this.idHashes.set(index, hash32(record.id));
    this.place(index, span ? span.offset : NO_LINE);
  }

  /**
   * The index for a new record: the end, as records come in creation order,
   * except at replay after a first line that had to be written again reached
   * the journal behind a later line of its record (the columns stay sorted).
   */
  private makeRoomFor(seq: number): number {
    let index = this.length++;
    for (const column of this.columns) column.reserve(this.length);
    for (; index > 0 && this.seqs.get(index - 1) > seq; index -= 1) {
      for (const column of this.columns) column.set(index, column.get(index - 1));
    }
    return index;
  }

  place(index: number, offset: number): void {
    this.offsets.set(index, offset);
  }

  /** The index of the record created at `seq`, or -1. */
  indexOf(seq: number): number {
    // A new record's sequence is past the last one (replay meets every record's first line so).
    if (this.length === 0 || seq > this.seqs.get(this.length - 1)) return -1;
    const index = this.below(seq + 1);
    return index >= 0 && this.seqs.get(index) === seq ? index : -1;
  }

  /** The index of the last record created before `seq` (-1 if none). */
  below(seq: number): number {
    let low = 0;
    let high = this.length;
    // Most lookups are of recent records: when the sequence is past the newest block's first (in
    // memory), the search stays in that block instead of reading pages of the swap.
    const newestBlock = Math.max(0, this.length - 1) & ~(BLOCK_SIZE - 1);
    if (newestBlock > 0 && this.seqs.get(newestBlock) < seq) low = newestBlock + 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.seqs.get(middle) < seq) low = middle + 1;
      else high = middle;
    }
    return low - 1;
  }

  /** Keeps the records `keep` accepts (asked oldest first, before any is moved); returns how many went. */
  retain(keep: (index: number) => boolean): number {
    const kept = new Uint8Array(this.length);
    let count = 0;
    for (let index = 0; index < this.length; index += 1) if (keep(index)) count += kept[index] = 1;
    if (count === this.length) return 0;
    for (const column of this.columns) column.retain(kept, this.length);
    const removed = this.length - count;
    this.length = count;
    return removed;
  }

  /** The workspace's records are gone: their swap space is free. */
  release(): void {
    for (const column of this.columns) column.release();
  }
}

/** New records whose first line is still to be written, and the write that will carry them. */
interface FirstLines {
  /** Their creation sequences, by delivery id. */
  ids: Map<string, number>;
  /** What waits for them to be on disk (see whenRecorded). */
  then: Array<() => void>;
  /** Resolves once the write was tried, written or not (see whenRecorded). */
  tried: Promise<void>;
  resolve: () => void;
  timer: NodeJS.Timeout;
}

/** A record whose latest state is not on disk yet, and which change of it that is. */
interface Held {
  record: DeliveryRecord;
  version: number;
}

/** A PENDING or DEAD record found by its id: where its index entry is now (valid until the columns change). */
interface Located {
  records: WorkspaceRecords;
  index: number;
  seq: number;
  /** Its slot in `tracked`. */
  slot: number;
  record: DeliveryRecord;
}

const isTracked = (status: DeliveryStatus) => status === 'PENDING' || status === 'DEAD';

/**
 * Every delivery's record, as a journal (deliveries.log), written in groups
 * without the publisher waiting: until a record is on disk its delivery stays
 * in the (durable) outbox, which rebuilds it after a crash. Attempts and status
 * changes are journalled the same way, so a crash loses at most the last
 * attempt results, never a record. Records stay until retention removes their
 * event.
 *
 * Memory holds an index, not the records (see WorkspaceRecords): a listing
 * filters on the columns and reads only its page's lines. PENDING and DEAD
 * records (the only ones that change later: attempts, replay, discard) are
 * found by id through `tracked`, a table of 10 bytes a slot. Held whole are
 * only records whose latest state is not on disk yet: created within the last
 * FIRST_LINE_DELAY_MS, or changed and their line not yet written.
 */
export class DeliveryRecords {
  private log!: AppendLog<Entry>;
  private readonly workspaces = new Map<string, WorkspaceRecords>();
  private readonly byOrdinal: Array<WorkspaceRecords | undefined> = [];
  /** PENDING and DEAD records: id fingerprint to creation sequence, tagged with their workspace's ordinal. */
  private readonly tracked = new FingerprintTable().withTags().withChecks();
  /** Records whose latest state is not on disk yet, by creation sequence. */
  private readonly held = new Map<number, Held>();
  private version = 0;
  private count = 0;
  private nextSeq = 1;
  private entries = 0;
  /** New records waiting for their first line (see FIRST_LINE_DELAY_MS), first those whose write failed. */
  private waiting: FirstLines | null = null;
  /** Records whose first line is not yet on disk: the write that will put it there. */
  private readonly unsynced = new Map<string, FirstLines>();
  /** Reads a line of the journal: while it is replayed at open, from a reader of its own. */
  private readLine: (offset: number) => string = (offset) => this.log.readLine(offset);

  private closing = false;
  private readonly checkpoints: CheckpointSchedule;

  private constructor(
    private readonly reportError: (error: unknown) => void,
    private readonly recording: boolean,
    private readonly swap: Swap,
    checkpointBytes: number,
  ) {
    this.checkpoints = new CheckpointSchedule(() => this.log, checkpointBytes, () => this.checkpoint(), reportError);
  }

  /**
   * `recording` false (the bench's comparison only) keeps no new record.
   * Reads the last checkpoint when the journal still begins with what it
   * covers, and replays the journal after it; without one, all of it.
   */
  static async open(file: string, reportError: (error: unknown) => void, recording = true, checkpointBytes = CHECKPOINT_BYTES): Promise<DeliveryRecords> {
    const records = new DeliveryRecords(reportError, recording, new Swap(dirname(file), SWAP_CACHE_BYTES), checkpointBytes);
    const index = readJournalCheckpoint<IndexHeader>(file, (header) =>
      header.version === INDEX_VERSION ? header.workspaces.reduce((sum, { length }) => sum + length, 0) * INDEX_BYTES_PER_RECORD + header.tracked * INDEX_BYTES_PER_TRACKED : -1,
    );
    let from = 0;
    if (index) {
      records.restore(index);
      from = index.header.journalBytes;
      records.checkpoints.restored(from);
      if (statSync(file).size === from) {
        // A clean stop's checkpoint: nothing after it.
        records.log = await AppendLog.resume<Entry>(file, from);
        return records;
      }
    }
    let legacyLines = false;
    let reader: number | null = null;
    records.readLine = (offset) => readLineAt((reader ??= openSync(file, 'r')), offset);
    try {
      records.log = await AppendLog.open<Entry, ReplayedEntry>(
        file,
        (entry, span) => {
          records.entries += 1;
          if (entry.t === 'status') legacyLines = records.applyLegacyStatus(entry) || legacyLines;
          else if (entry.t === 'try') legacyLines = records.applyLegacyTry(entry) || legacyLines;
          else records.replayed(entry.seq, entry.record, span);
        },
        { decode: replayedEntry, from },
      );
    } finally {
      if (reader !== null) closeSync(reader);
      records.readLine = (offset) => records.log.readLine(offset);
    }
    // Records changed by `try` and `status` lines are held whole: one rewrite gives each its line.
    if (legacyLines) await records.compact();
    // After a start that replayed much, the next crash need not.
    records.checkpoints.due();
    return records;
  }

  get size(): number {
    return this.count;
  }

  /** The record of a delivery that is PENDING or DEAD (the others are found by listing). */
  get(id: string): DeliveryRecord | undefined {
    return this.locate(id)?.record;
  }

  /**
   * Records new deliveries: in memory at once, on disk with the first lines
   * written FIRST_LINE_DELAY_MS later, in their state by then. The publisher
   * need not wait for it: the outbox holds each delivery durably until
   * `whenRecorded` says its record is on disk, and after a crash a pending
   * delivery without a record gets one again (`reconcile`).
   */
  created(deliveries: readonly Delivery[]): void {
    if (!this.recording) return;
    for (const delivery of deliveries) {
      const seq = this.nextSeq++;
      const record = recordOf(delivery);
      this.add(seq, record, null);
      this.held.set(seq, { record, version: ++this.version });
      const waiting = (this.waiting ??= this.waitForFirstLines());
      waiting.ids.set(delivery.id, seq);
      this.unsynced.set(delivery.id, waiting);
    }
  }

  private waitForFirstLines(delayMs = FIRST_LINE_DELAY_MS): FirstLines {
    let resolve!: () => void;
    const tried = new Promise<void>((done) => (resolve = done));
    const waiting: FirstLines = {
      ids: new Map(),
      then: [],
      tried,
      resolve,
      timer: setTimeout(() => void this.writeFirstLines(waiting), delayMs),
    };
    return waiting;
  }

  /** Never rejects: a failed write is reported, and written again later (see writeAgainLater). */
  private writeFirstLines(waiting: FirstLines): Promise<void> {
    clearTimeout(waiting.timer);
    if (this.waiting === waiting) this.waiting = null;
    const lines: Array<{ seq: number } & Held> = [];
    for (const seq of waiting.ids.values()) {
      const held = this.held.get(seq);
      // Not held: removed with its event or workspace meanwhile, or on disk already (a compaction wrote it).
      if (held) lines.push({ seq, ...held });
    }
    this.entries += lines.length;
    const entries = lines.map(({ seq, record }): Entry => ({ t: 'new', seq, record }));
    return this.log
      .appendAll(entries, (index, span) => {
        const { seq, record, version } = lines[index]!;
        this.written(seq, record.workspaceId, version, span);
      })
      .then(
        () => {
          for (const id of waiting.ids.keys()) if (this.unsynced.get(id) === waiting) this.unsynced.delete(id);
          for (const then of waiting.then) then();
        },
        (error: unknown) => {
          this.reportError(error);
          if (!this.closing) return this.writeAgainLater(waiting);
          this.reportError(
            new Error(`${waiting.ids.size} delivery records could not be written; their deliveries stay in the outbox and are recorded at the next start`),
          );
        },
      )
      .finally(waiting.resolve);
  }

  /**
   * The failed group's lines go first in the waiting group, which waits
   * FIRST_LINE_RETRY_MS: first lines reach the journal in creation order, and
   * changes of these records keep joining their first line meanwhile.
   */
  private writeAgainLater(failed: FirstLines): void {
    const later = this.waiting;
    const retry = this.waitForFirstLines(FIRST_LINE_RETRY_MS);
    const groups = later ? [failed, later] : [failed];
    // In creation order even when groups written at once failed out of it.
    const ids = groups.flatMap((group) => [...group.ids]).sort((a, b) => a[1] - b[1]);
    for (const [id, seq] of ids) {
      retry.ids.set(id, seq);
      this.unsynced.set(id, retry);
    }
    for (const group of groups) retry.then.push(...group.then);
    if (later) {
      clearTimeout(later.timer);
      void retry.tried.then(later.resolve);
    }
    this.waiting = retry;
  }

  /**
   * Runs `then` once the delivery's record is on disk (at once if it is, or if
   * there is none): only then may the outbox forget the delivery. A failed
   * write is reported and tried again; `then` waits for the write that
   * succeeds. If none does before the daemon stops, the delivery stays in the
   * outbox and the next start records it (`reconcile`). Returns the first try,
   * which shutdown waits for (not for a disk that stays full).
   */
  whenRecorded(id: string, then: () => void): Promise<void> | undefined {
    const waiting = this.unsynced.get(id);
    if (!waiting) {
      then();
      return undefined;
    }
    waiting.then.push(then);
    return waiting.tried;
  }

  /**
   * One attempt's result, numbered after the record's last (here, where the
   * record is already located); `nextAttemptAt` when it is retried.
   * Journalled as the record's whole state.
   */
  attempted(id: string, attempt: NewAttempt, nextAttemptAt: number | null, status: DeliveryStatus): void {
    const found = this.locate(id);
    if (!found || found.record.status !== 'PENDING') return;
    const attempts = [...found.record.attempts, { number: (found.record.attempts.at(-1)?.number ?? 0) + 1, ...attempt }];
    const changed =
      status === 'PENDING'
        ? recordIn(found.record, 'PENDING', nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString(), null, attempts)
        : recordIn(found.record, status, null, new Date(Date.parse(attempt.startedAt) + attempt.durationMs).toISOString(), attempts);
    void this.journalState(found.seq, changed, this.change(found, changed), false);
  }

  /** Dead-lettered without an attempt (its subscriber is gone), or settled at the start (`reconcile`). */
  moved(id: string, status: DeliveryStatus, at: number): void {
    const found = this.locate(id);
    if (found) this.move(found, status, at, false);
  }

  /** Durable variant of `moved`, for moves the caller answers about (replay, discard). */
  async movedDurably(ids: readonly string[], status: DeliveryStatus, at: number): Promise<void> {
    const writes: Array<Promise<void>> = [];
    for (const id of ids) {
      const found = this.locate(id);
      if (found) writes.push(this.move(found, status, at, true));
    }
    await Promise.all(writes);
  }

  /**
   * After a crash: a pending delivery whose record was not yet on disk gets
   * one again (unless its record is there, finished: the outbox had not yet
   * forgotten the delivery); a PENDING record whose delivery left the outbox
   * before its status was journalled is DEAD if a dead letter holds it, else
   * SUCCEEDED.
   *
   * `pending` names every delivery of the outbox by two 32-bit fingerprints
   * of its id and its workspace, matched against those the start kept of
   * each PENDING and DEAD record, without reading records or the outbox;
   * `load` gives the deliveries of those that have no record (normally the
   * few of the last FIRST_LINE_DELAY_MS before a crash). Once, at the start.
   */
  reconcile<T>(
    pending: Iterable<PendingFingerprint<T>>,
    load: (refs: T[]) => Iterable<Delivery>,
    isDead: (id: string) => boolean,
    now: number,
  ): void {
    const seen = new Uint8Array(this.tracked.capacity);
    const missing: T[] = [];
    for (const { idHash, check, workspaceId, ref } of pending) {
      const records = this.workspaces.get(workspaceId);
      let found = false;
      for (const slot of records ? this.tracked.find(idHash) : []) {
        if (this.tracked.tag(slot) !== records!.ordinal || this.tracked.check(slot) !== check) continue;
        seen[slot] = 1;
        found = true;
      }
      if (!found) missing.push(ref);
    }
    // The PENDING and DEAD records no pending delivery named, by workspace in creation order: one
    // forward pass over each workspace's sequences finds them all, reading the swap's pages in order
    // and once, where a search each would read pages all over it (a start with 10,000 dead letters
    // read 450 MB of pages so, and left the allocator holding 80 MB of freed ones).
    const unseen = new Map<number, number[]>();
    for (const slot of this.tracked.slots()) {
      if (seen[slot]) continue;
      const ordinal = this.tracked.tag(slot);
      const slots = unseen.get(ordinal);
      if (slots) slots.push(slot);
      else unseen.set(ordinal, [slot]);
    }
    for (const [ordinal, slots] of unseen) {
      const records = this.byOrdinal[ordinal];
      if (!records) continue;
      slots.sort((a, b) => this.tracked.value(a) - this.tracked.value(b));
      let index = 0;
      for (const slot of slots) {
        const seq = this.tracked.value(slot);
        while (index < records.length && records.seqs.get(index) < seq) index += 1;
        if (index === records.length) break;
        if (records.seqs.get(index) !== seq || records.statuses.get(index) !== STATUS_CODES.PENDING) continue;
        const record = this.recordAt(records, index);
        this.move({ records, index, seq, slot, record }, isDead(record.id) ? 'DEAD' : 'SUCCEEDED', now, false);
      }
    }
    if (missing.length === 0) return;
    const deliveries = new Map<string, Delivery>();
    for (const delivery of load(missing)) deliveries.set(delivery.id, delivery);
    const eventHashes = new Map<string, Set<number>>();
    for (const { event } of deliveries.values()) {
      const hashes = eventHashes.get(event.tenantId) ?? new Set<number>();
      eventHashes.set(event.tenantId, hashes.add(hash32(event.id)));
    }
    for (const [workspaceId, hashes] of eventHashes) {
      const records = this.workspaces.get(workspaceId);
      for (let index = 0; records && index < records.length; index += 1) {
        if (hashes.has(records.eventIdHashes.get(index))) deliveries.delete(this.recordAt(records, index).id);
      }
    }
    this.created([...deliveries.values()]);
  }

  /**
   * The record of one delivery of the workspace, whatever its status: a
   * PENDING or DEAD one by `tracked`, another by the fingerprints of the
   * workspace's ids, newest first, confirmed on the record.
   */
  find(workspaceId: string, id: string): DeliveryRecord | undefined {
    const tracked = this.locate(id);
    if (tracked) return tracked.record.workspaceId === workspaceId ? tracked.record : undefined;
    const records = this.workspaces.get(workspaceId);
    if (!records) return undefined;
    const idHash = hash32(id);
    for (let index = records.length - 1; index >= 0; index -= 1) {
      if (records.idHashes.get(index) !== idHash) continue;
      const record = this.recordAt(records, index);
      if (record.id === id) return record;
    }
    return undefined;
  }

  /** Records of one event, oldest first: found by the event id's fingerprint, confirmed on the record. */
  ofEvent(workspaceId: string, eventId: string): DeliveryRecord[] {
    const records = this.workspaces.get(workspaceId);
    if (!records) return [];
    const idHash = hash32(eventId);
    const found: DeliveryRecord[] = [];
    for (let index = 0; index < records.length; index += 1) {
      if (records.eventIdHashes.get(index) !== idHash) continue;
      const record = this.recordAt(records, index);
      if (record.eventId === eventId) found.push(record);
    }
    return found;
  }

  /**
   * How the deliveries of some events stand, by event id: one pass over the
   * workspace's columns for the records whose event id's fingerprint is among
   * `eventIdHashes` (confirmed on the record). An event with no record has no
   * entry. The events list asks for a batch of its events at a time.
   */
  summariesOf(workspaceId: string, eventIdHashes: ReadonlySet<number>): Map<string, DeliverySummary> {
    const summaries = new Map<string, DeliverySummary>();
    const records = this.workspaces.get(workspaceId);
    if (!records || eventIdHashes.size === 0) return summaries;
    for (let index = 0; index < records.length; index += 1) {
      if (!eventIdHashes.has(records.eventIdHashes.get(index))) continue;
      const { eventId, status } = this.recordAt(records, index);
      const summary = summaries.get(eventId) ?? noDeliveries();
      countDelivery(summary, status);
      summaries.set(eventId, summary);
    }
    return summaries;
  }

  /**
   * Newest first, into `budget` until it is full; `lastSeq` is the position of
   * the last item on the page, for the next cursor. Filters run on the columns
   * (fingerprints confirmed on the record); only the page's records are read.
   */
  list(workspaceId: string, query: DeliveryQuery, budget = unbounded<DeliveryRecord>()): { items: DeliveryRecord[]; lastSeq: number | null; more: boolean } {
    const records = this.workspaces.get(workspaceId);
    const items: DeliveryRecord[] = [];
    let lastSeq: number | null = null;
    if (!records) return { items, lastSeq, more: false };
    const status = query.status === undefined ? -1 : STATUS_CODES[query.status];
    const subscription = query.subscriptionId === undefined ? null : hash32(query.subscriptionId);
    const eventKey = query.eventKey === undefined ? null : hash32(query.eventKey);
    const since = query.since ?? Number.NEGATIVE_INFINITY;
    const until = query.until ?? Number.POSITIVE_INFINITY;
    const [sinceSecond, untilSecond] = [Math.floor(since / 1000), Math.floor(until / 1000)];
    let index = query.before === undefined ? records.length - 1 : records.below(query.before);
    for (; index >= 0; index -= 1) {
      if (status >= 0 && records.statuses.get(index) !== status) continue;
      if (subscription !== null && records.subscriptionHashes.get(index) !== subscription) continue;
      if (eventKey !== null && records.eventKeyHashes.get(index) !== eventKey) continue;
      const second = records.createdSeconds.get(index);
      if (second < sinceSecond || second > untilSecond) continue;
      const record = this.recordAt(records, index);
      if (query.subscriptionId !== undefined && record.subscriptionId !== query.subscriptionId) continue;
      if (query.eventKey !== undefined && record.eventKey !== query.eventKey) continue;
      if (second === sinceSecond || second === untilSecond) {
        const created = Date.parse(record.createdAt);
        if (created < since || created > until) continue;
      }
      if (budget.count === query.limit || !budget.admit(record)) return { items, lastSeq, more: true };
      items.push(record);
      lastSeq = records.seqs.get(index);
    }
    return { items, lastSeq, more: false };
  }

  /**
   * Every record with its creation sequence, workspace by workspace, each in
   * creation order, read one at a time (for `platform db import`).
   */
  *all(): Generator<{ seq: number; record: DeliveryRecord }> {
    for (const records of this.workspaces.values()) {
      for (let index = 0; index < records.length; index += 1) yield { seq: records.seqs.get(index), record: this.recordAt(records, index) };
    }
  }

  /** Retention removed these events: their records go too, and the journal is rewritten without them. */
  async removeEvents(eventIds: ReadonlySet<string>): Promise<number> {
    if (eventIds.size === 0) return 0;
    const hashes = new Set<number>();
    for (const eventId of eventIds) hashes.add(hash32(eventId));
    let removed = 0;
    for (const [workspaceId, records] of this.workspaces) {
      removed += records.retain((index) => {
        if (!hashes.has(records.eventIdHashes.get(index))) return true;
        const record = this.recordAt(records, index);
        if (!eventIds.has(record.eventId)) return true;
        const seq = records.seqs.get(index);
        this.held.delete(seq);
        if (isTracked(record.status)) {
          const slot = this.tracked.slotOf(hash32(record.id), seq);
          if (slot >= 0) this.tracked.remove(slot);
        }
        return false;
      });
      if (records.length === 0) this.dropWorkspace(workspaceId, records);
    }
    this.count -= removed;
    if (removed > 0) await this.compact();
    return removed;
  }

  /** A deleted workspace's records. */
  async removeWorkspace(workspaceId: string): Promise<void> {
    const records = this.workspaces.get(workspaceId);
    if (!records) return;
    this.dropWorkspace(workspaceId, records);
    for (const [seq, held] of this.held) if (held.record.workspaceId === workspaceId) this.held.delete(seq);
    this.count -= records.length;
    await this.compact();
  }

  /** First lines still waiting get one last try; then a checkpoint at the journal's end, which the next start reads instead of it. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.waiting) await this.writeFirstLines(this.waiting);
    await this.checkpoints.stop();
    await this.log.close();
    await this.checkpoint().catch(this.reportError);
    this.swap.close();
  }

  /**
   * Writes a checkpoint (deliveries.idx) of the journal as it is now: every
   * workspace's columns (37 bytes a record) and the PENDING and DEAD
   * records' table (20 bytes an entry), so that a start reads it instead of
   * the journal up to here and replays only what follows. Taken each time
   * the journal has grown by `checkpointBytes` and at a clean stop. A record
   * whose latest state is held in memory for want of its line is saved as
   * its line on disk says, and one without a line yet is left out: the
   * checkpoint says what a replay of the journal would, and the lines written
   * later are replayed after it. The columns are copied at once and written
   * out a few megabytes a turn.
   */
  private async checkpoint(): Promise<void> {
    const journal = this.log.file;
    const bytes = this.log.byteSize;
    /** Held records by creation sequence: the status of their latest line on disk, or null without one. */
    const onDisk = new Map<number, { status: DeliveryStatus | null; record: DeliveryRecord }>();
    for (const [seq, held] of this.held) {
      const records = this.workspaces.get(held.record.workspaceId);
      const index = records ? records.indexOf(seq) : -1;
      if (index < 0) continue;
      const offset = records!.offsets.get(index);
      const status = offset === NO_LINE ? null : (JSON.parse(this.readLine(offset)) as Entry & { record: DeliveryRecord }).record.status;
      onDisk.set(seq, { status, record: held.record });
    }
    const workspaces = [...this.workspaces].map(([id, records]) => ({ id, ordinal: records.ordinal, values: records.columnsOut(), length: records.length }));
    // Typed: a million entries as arrays of numbers would grow the heap by tens of megabytes for a moment.
    const room = this.tracked.size + onDisk.size;
    const tracked = { keys: new Uint32Array(room), seqs: new Float64Array(room), tags: new Uint32Array(room), checks: new Uint32Array(room), length: 0 };
    const track = (key: number, seq: number, tag: number, check: number) => {
      const at = tracked.length++;
      tracked.keys[at] = key;
      tracked.seqs[at] = seq;
      tracked.tags[at] = tag;
      tracked.checks[at] = check;
    };
    for (const slot of this.tracked.slots()) {
      if (!onDisk.has(this.tracked.value(slot))) track(this.tracked.key(slot), this.tracked.value(slot), this.tracked.tag(slot), this.tracked.check(slot) ?? 0);
    }
    for (const [seq, { status, record }] of onDisk) {
      if (status !== null && isTracked(status)) track(hash32(record.id), seq, this.workspaces.get(record.workspaceId)!.ordinal, hash32b(record.id));
    }
    const header = { version: INDEX_VERSION, entries: this.entries, nextSeq: this.nextSeq, ordinals: this.byOrdinal.length, ...journalMarkAt(journal, bytes) };
    const current = this.checkpoints.current();
    // Then, a turn at a time: each workspace's columns without the records that have no line, with their statuses on disk.
    const columns: IndexColumn[] = [];
    const kept: Array<{ id: string; ordinal: number; length: number }> = [];
    let count = 0;
    for (const { id, ordinal, values, length } of workspaces) {
      const [seqs, , statuses] = values as [Float64Array, Uint32Array, Uint8Array];
      const keep = new Uint8Array(length);
      let keptLength = 0;
      for (let index = 0; index < length; index += 1) {
        const disk = onDisk.get(seqs[index]!);
        if (disk?.status === null) continue;
        if (disk) statuses[index] = STATUS_CODES[disk.status];
        keep[index] = 1;
        keptLength += 1;
      }
      for (const column of values) {
        const out = new (column.constructor as new (length: number) => IndexColumn)(keptLength);
        for (let index = 0, at = 0; index < length; index += 1) if (keep[index]) out[at++] = column[index]!;
        columns.push(out);
      }
      kept.push({ id, ordinal, length: keptLength });
      count += keptLength;
      await nextTurn();
    }
    const { length } = tracked;
    columns.push(tracked.keys.subarray(0, length), tracked.seqs.subarray(0, length), tracked.tags.subarray(0, length), tracked.checks.subarray(0, length));
    await writeIndexFileInTurns(
      indexFileOf(journal),
      { ...header, count, workspaces: kept, tracked: length } satisfies IndexHeader,
      columns,
      current,
    );
  }

  /** A checkpoint (see checkpoint): what a replay of the journal up to it finds. */
  private restore({ header, take }: IndexReader<IndexHeader>): void {
    this.entries = header.entries;
    this.count = header.count;
    this.nextSeq = header.nextSeq;
    this.byOrdinal.length = header.ordinals;
    for (const { id, ordinal, length } of header.workspaces) {
      const records = new WorkspaceRecords(ordinal, this.swap);
      records.restore(length, take);
      this.byOrdinal[ordinal] = records;
      this.workspaces.set(id, records);
    }
    const [keys, seqs, tags, checks] = [take(Uint32Array, header.tracked), take(Float64Array, header.tracked), take(Uint32Array, header.tracked), take(Uint32Array, header.tracked)];
    this.tracked.reserve(header.tracked);
    for (let entry = 0; entry < header.tracked; entry += 1) this.tracked.add(keys[entry]!, seqs[entry]!, tags[entry]!, checks[entry]!);
  }

  // Applying the journal at the start

  /** A whole line of a record: its first, or (the last one wins) a later state. */
  private replayed(seq: number, record: RecordHead, span: LineSpan): void {
    this.nextSeq = Math.max(this.nextSeq, seq + 1);
    const records = this.workspaces.get(record.workspaceId);
    const index = records?.indexOf(seq) ?? -1;
    if (index < 0) return this.add(seq, record, span);
    const wasTracked = records!.statuses.get(index) === STATUS_CODES.PENDING || records!.statuses.get(index) === STATUS_CODES.DEAD;
    records!.statuses.set(index, STATUS_CODES[record.status]);
    records!.place(index, span.offset);
    // Superseding what `try` or `status` lines made of it.
    this.held.delete(seq);
    if (wasTracked && !isTracked(record.status)) {
      const slot = this.tracked.slotOf(hash32(record.id), seq);
      if (slot >= 0) this.tracked.remove(slot);
    } else if (!wasTracked && isTracked(record.status)) {
      this.tracked.add(hash32(record.id), seq, records!.ordinal, hash32b(record.id));
    }
  }

  /** Returns whether the record is now held whole for want of a line of its own. */
  private applyLegacyStatus(entry: Extract<Entry, { t: 'status' }>): boolean {
    const found = this.locate(entry.id);
    if (!found) return false;
    this.change(found, statusChanged(found.record, entry.status, Date.parse(entry.at)));
    return true;
  }

  /** Returns whether the record is now held whole for want of a line of its own. */
  private applyLegacyTry(entry: Extract<Entry, { t: 'try' }>): boolean {
    const found = this.locate(entry.id);
    const record = found?.record;
    if (!found || !record || record.status !== 'PENDING' || record.attempts.some((attempt) => attempt.number === entry.attempt.number)) return false;
    this.change(found, recordIn(record, 'PENDING', entry.nextAttemptAt, null, [...record.attempts, entry.attempt]));
    return true;
  }

  // The index

  /** Indexes a record (at replay, only its head is read); without a line yet (`span` null), the caller holds it whole. */
  private add(seq: number, record: RecordHead, span: LineSpan | null): void {
    let records = this.workspaces.get(record.workspaceId);
    if (!records) {
      records = new WorkspaceRecords(this.byOrdinal.length, this.swap);
      this.byOrdinal.push(records);
      this.workspaces.set(record.workspaceId, records);
    }
    records.push(seq, record, span);
    this.count += 1;
    if (isTracked(record.status)) this.tracked.add(hash32(record.id), seq, records.ordinal, hash32b(record.id));
  }

  private dropWorkspace(workspaceId: string, records: WorkspaceRecords): void {
    records.release();
    this.tracked.removeWhere((_seq, ordinal) => ordinal === records.ordinal);
    this.byOrdinal[records.ordinal] = undefined;
    this.workspaces.delete(workspaceId);
  }

  private recordAt(records: WorkspaceRecords, index: number): DeliveryRecord {
    const held = this.held.get(records.seqs.get(index));
    if (held) return held.record;
    return (JSON.parse(this.readLine(records.offsets.get(index))) as Entry & { record: DeliveryRecord }).record;
  }

  /** The PENDING or DEAD record of this id: its fingerprint's slots, confirmed on the record. */
  private locate(id: string): Located | undefined {
    for (const slot of this.tracked.find(hash32(id))) {
      const found = this.atSlot(slot);
      if (found?.record.id === id) return found;
    }
    return undefined;
  }

  private atSlot(slot: number): Located | undefined {
    const records = this.byOrdinal[this.tracked.tag(slot)];
    const seq = this.tracked.value(slot);
    const index = records ? records.indexOf(seq) : -1;
    if (index < 0) return undefined;
    return { records: records!, index, seq, slot, record: this.recordAt(records!, index) };
  }

  /** The record is now `changed`, held until the line of this change is on disk; returns the change's version. */
  private change(found: Located, changed: DeliveryRecord): number {
    const version = ++this.version;
    this.held.set(found.seq, { record: changed, version });
    found.records.statuses.set(found.index, STATUS_CODES[changed.status]);
    if (!isTracked(changed.status)) this.tracked.remove(found.slot);
    return version;
  }

  /** PENDING again: due at `at`; else: completed at `at`. */
  private move(found: Located, status: DeliveryStatus, at: number, durably: boolean): Promise<void> {
    const changed = statusChanged(found.record, status, at);
    return this.journalState(found.seq, changed, this.change(found, changed), durably);
  }

  /** Journals the record's whole state; once that line is on disk, the record is read from it instead of held. */
  private journalState(seq: number, record: DeliveryRecord, version: number, durably: boolean): Promise<void> {
    // Its first line is still to be written, in the state it will be in then.
    if (this.waiting?.ids.has(record.id)) return this.waiting.tried;
    const entry: Entry = { t: 'state', seq, record };
    this.entries += 1;
    const written = (span: LineSpan | null) => this.written(seq, record.workspaceId, version, span);
    if (durably) return this.log.append(entry).then(written);
    this.log.appendLazily(entry, this.reportError, written);
    this.compactIfSparse();
    return Promise.resolve();
  }

  /**
   * A line of the record is on disk. Lines are written in order, but a
   * durable append hears of it a microtask after a lazy one of the same group:
   * only the record's latest change counts. (null: a rewrite superseded the
   * line and placed the record itself.)
   */
  private written(seq: number, workspaceId: string, version: number, span: LineSpan | null): void {
    this.checkpoints.due();
    if (!span || this.held.get(seq)?.version !== version) return;
    const records = this.workspaces.get(workspaceId);
    const index = records ? records.indexOf(seq) : -1;
    if (index < 0) return;
    records!.place(index, span.offset);
    this.held.delete(seq);
  }

  private compactIfSparse(): void {
    if (this.entries > this.count * 4 + COMPACT_SLACK) this.compact().catch(this.reportError);
  }

  /**
   * Rewrites the journal as one line per record: the lines of records on
   * disk copied, held records written whole. Every pending append is
   * reflected, since what is not yet on disk is held. The new offsets are
   * swapped in when the new file replaces the old one; a held record not
   * changed meanwhile is read from its new line from then on.
   */
  private compact(): Promise<void> {
    this.checkpoints.rewriting();
    const offsets = new Float64Array(this.count);
    const seqs = new Float64Array(this.count);
    const texts = new Map<number, string>();
    const order: Array<{ records: WorkspaceRecords; from: number; to: number }> = [];
    const settles: Array<{ seq: number; version: number }> = [];
    let line = 0;
    for (const records of this.workspaces.values()) {
      const from = line;
      for (let index = 0; index < records.length; index += 1, line += 1) {
        const seq = (seqs[line] = records.seqs.get(index));
        const held = this.held.get(seq);
        if (held) {
          texts.set(line, JSON.stringify({ t: 'new', seq, record: held.record } satisfies Entry));
          settles.push({ seq, version: held.version });
        } else {
          offsets[line] = records.offsets.get(index);
        }
      }
      order.push({ records, from, to: line });
    }
    this.entries = this.count;
    return this.log.rewriteLines({ offsets, texts }, (rewritten) => {
      for (const { records, from, to } of order) {
        // Records removed since are skipped; records added since come after these, in their own lines.
        let index = 0;
        for (let n = from; n < to; n += 1) {
          while (index < records.length && records.seqs.get(index) < seqs[n]!) index += 1;
          if (index < records.length && records.seqs.get(index) === seqs[n]) {
            records.place(index, rewritten[n]!);
          }
        }
      }
      for (const { seq, version } of settles) if (this.held.get(seq)?.version === version) this.held.delete(seq);
    });
  }
}

/**
 * The record with this status and these times, as a new object: deleting
 * properties would turn records into slow dictionary objects (they are
 * changed and serialized once a delivery).
 */
function recordIn(
  record: DeliveryRecord,
  status: DeliveryStatus,
  nextAttemptAt: string | null,
  completedAt: string | null,
  attempts = record.attempts,
): DeliveryRecord {
  const { id, eventId, eventKey, workspaceId, subscriptionId, extensionKey, kind, createdAt, redeliveryOf } = record;
  if (redeliveryOf !== undefined) return redeliveryIn(record, redeliveryOf, status, nextAttemptAt, completedAt, attempts);
  if (completedAt !== null) return { id, eventId, eventKey, workspaceId, subscriptionId, extensionKey, kind, status, attempts, createdAt, completedAt };
  if (nextAttemptAt !== null) return { id, eventId, eventKey, workspaceId, subscriptionId, extensionKey, kind, status, attempts, nextAttemptAt, createdAt };
  return { id, eventId, eventKey, workspaceId, subscriptionId, extensionKey, kind, status, attempts, createdAt };
}

/**
 * `recordIn` for the record of a redelivery: `redeliveryOf` right after the
 * status, where start-up's reading of a line's head (RECORD_HEAD) and tail
 * (TAIL_BYTES) leaves it alone.
 */
function redeliveryIn(
  record: DeliveryRecord,
  redeliveryOf: string,
  status: DeliveryStatus,
  nextAttemptAt: string | null,
  completedAt: string | null,
  attempts: DeliveryRecord['attempts'],
): DeliveryRecord {
  const { id, eventId, eventKey, workspaceId, subscriptionId, extensionKey, kind, createdAt } = record;
  return {
    id,
    eventId,
    eventKey,
    workspaceId,
    subscriptionId,
    extensionKey,
    kind,
    status,
    redeliveryOf,
    attempts,
    ...(completedAt === null && nextAttemptAt !== null ? { nextAttemptAt } : {}),
    createdAt,
    ...(completedAt === null ? {} : { completedAt }),
  };
}

/** The record in a new status: PENDING again, due at `at`; else completed at `at`. */
function statusChanged(record: DeliveryRecord, status: DeliveryStatus, at: number): DeliveryRecord {
  const when = new Date(at).toISOString();
  return status === 'PENDING' ? recordIn(record, status, when, null) : recordIn(record, status, null, when);
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
    ...(delivery.redeliveryOf === undefined ? {} : { redeliveryOf: delivery.redeliveryOf }),
    attempts: [],
    nextAttemptAt: new Date(delivery.nextAttemptAt).toISOString(),
    createdAt: delivery.enqueuedAt,
  };
}
