import { open, stat } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { AppendLog, replay, stagedWrite, type LineSpan } from '../append-log.js';
import { isMissing, writeFileDurably } from '../../files.js';
import { Column, hash32, hash32b } from '../line-index.js';
import {
  CheckpointSchedule,
  indexFileOf,
  journalMarkAt,
  readJournalCheckpoint,
  restoreColumns,
  rowBytes,
  writeIndexFileInTurns,
  type IndexColumn,
  type IndexReader,
  type JournalMark,
} from '../index-file.js';
import { CarriedEvent, type Delivery, type DeliveryError, type SubscriberRef } from '../../dispatch/types.js';
import type { PendingFingerprint } from './delivery-records.js';
import { maskCredentials, showsCredentials } from '../../dispatch/url-credentials.js';

/**
 * The journal's lines (outbox.log):
 * - `p`: an event's payload, written once per publish, right before the `d`
 *   lines of its deliveries; start-up reads only the event id at its start.
 * - `d`: one run of a delivery, without its event: written when it is queued
 *   and again after each failed attempt (the last one wins). Its payload is
 *   the last `p` line of its event before its first `d` line.
 * - `x`: the run ended (delivered, or moved to the dead letters).
 */
interface DeliveryLine {
  t: 'd';
  id: string;
  /** The replay count: a replay sends a dead letter again under the same id, the count tells the runs apart. */
  rc: number;
  /** The event's id (confirmed on the payload), workspace and key (absent from lines written before it was kept). */
  ev: string;
  ws: string;
  ek?: string;
  depth: number;
  sub: SubscriberRef;
  attempts: number;
  due: number;
  enq: string;
  first: string | null;
  err: DeliveryError | null;
  /** The delivery this one sends again (see Delivery.redeliveryOf); before `dl`, which start-up reads at the line's end. */
  ro?: string;
  dl?: string;
}

interface PayloadLine {
  t: 'p';
  /** The event's id, first, so that start-up finds it without parsing the line. */
  id: string;
  e: PlatformEvent;
}

type Line = PayloadLine | DeliveryLine | { t: 'x'; id: string; rc: number };

/** What start-up takes from a `d` line (see runLineReader). */
type ReplayedRun = Pick<DeliveryLine, 't' | 'id' | 'rc' | 'ev' | 'ws' | 'sub' | 'due' | 'enq' | 'dl'>;
type ReplayedLine = ReplayedRun | Exclude<Line, DeliveryLine>;

/** A delivery as the old format kept it: with its event whole. */
type LegacyDelivery = Omit<Delivery, 'event'> & { event: PlatformEvent };

/** The format before payloads were split from deliveries: read once at start and rewritten. */
type LegacyLine =
  | { t: 'add'; delivery: LegacyDelivery }
  | { t: 'retry'; key: string; attempts: number; nextAttemptAt: number; firstAttemptAt: string | null; lastError: DeliveryError }
  | { t: 'done'; key: string };

const PAYLOAD_PREFIX = Buffer.from('{"t":"p","id":"');

/** What outbox.idx holds besides the columns (see Outbox.checkpoint). */
interface IndexHeader extends JournalMark {
  version: number;
  journalLines: number;
  slots: number;
  /** Fairness keys by group number, and workspaces by number. */
  groups: string[];
  workspaces: string[];
  /** Pending replays: the dead letter, and the slot of its run. */
  replays: Array<[string, number]>;
}

const INDEX_VERSION = 1;

/**
 * A checkpoint (outbox.idx) is written each time the journal has grown this
 * much since the last one: a start after a crash reads it and replays at most
 * about this much of the journal (some 0.8 s for 256 MB measured), at the
 * cost of writing 45 bytes a pending delivery that often.
 */
const CHECKPOINT_BYTES = 256 * 1024 * 1024;

/** The start-up lookup of runs: by the fingerprints their slots keep (so that it can be rebuilt from an index). */
const runHash = (idHash: number, replayCount: number) => (idHash ^ Math.imul((replayCount & 0xff) + 1, 0x9e3779b1)) >>> 0;

const keyOf = (delivery: { id: string; replayCount: number }) => `${delivery.id}:${delivery.replayCount}`;

/** Who a delivery's turn counts against when claiming: its subscription, or its extension for built-in plugins (as the dispatcher). */
const fairnessKeyOf = (subscriber: SubscriberRef) => subscriber.subscriptionId ?? `plugin:${subscriber.extensionKey}`;

/**
 * Compact once the journal holds this many lines more than twice what the
 * pending deliveries need (two lines each at most: a payload and a state), so
 * that the copying a compaction does is paid for by as many lines written.
 * With few pending, a compaction every 50,000 lines (a publish and its
 * delivery write three) keeps their cost (appends wait for each) out of the
 * publish rate.
 */
const COMPACT_SLACK = 50_000;
/** Drop ended deliveries from the index once they are this many more than a quarter of the pending ones. */
const INDEX_SLACK = 4_096;
/** What a migration from the old format writes at once. */
const WRITE_CHUNK = 1024 * 1024;

/**
 * Deliveries a publish hands the dispatcher at most while it holds others: a
 * few megabytes, enough that a subscriber that keeps up never has its
 * deliveries read back from disk in a burst.
 */
const DEFAULT_HOLD_AT_MOST = 1024;

const DEAD = 0;
const WAITING = 1;
const HELD = 2;
/** Delivered or dead-lettered, until its record is on disk (see FileDeliveryStore.doneOnceRecorded). */
const FINISHING = 3;

/**
 * Pending deliveries as columns, in the order of the journal: fingerprint of
 * the id, replay count, state, fairness group, due time, where its latest `d`
 * line and its payload are, a second fingerprint of the id and the number of
 * its workspace (both for reconciling the records at start, see
 * startFingerprints): 46 bytes a delivery (plus 4 in its group's heap while it
 * waits). Everything else is read back from the journal when the delivery is
 * claimed.
 */
class Slots {
  length = 0;
  readonly idHashes = new Column(Uint32Array);
  readonly replayCounts = new Column(Uint8Array);
  readonly states = new Column(Uint8Array);
  readonly groups = new Column(Uint32Array);
  readonly due = new Column(Float64Array);
  readonly lines = new Column(Float64Array);
  readonly payloads = new Column(Float64Array);
  readonly payloadLengths = new Column(Uint32Array);
  readonly checks = new Column(Uint32Array);
  readonly workspaces = new Column(Uint32Array);

  readonly columns: readonly Column[] = [
    this.idHashes,
    this.replayCounts,
    this.states,
    this.groups,
    this.due,
    this.lines,
    this.payloads,
    this.payloadLengths,
    this.checks,
    this.workspaces,
  ];
  /** What the index a clean stop writes holds of a slot: all but its state (every run waits again at the next start). */
  readonly indexed: readonly Column[] = this.columns.filter((column) => column !== this.states);

  add(): number {
    const slot = this.length++;
    for (const column of this.columns) column.reserve(this.length);
    return slot;
  }
}

/**
 * Waiting deliveries of one fairness group, earliest due first (then oldest
 * slot): a binary min-heap of slot numbers.
 */
class SlotHeap {
  length = 0;
  private items = new Column(Uint32Array);

  constructor(private readonly slots: () => Slots) {}

  private before(a: number, b: number): boolean {
    const due = this.slots().due;
    const da = due.get(a);
    const db = due.get(b);
    return da < db || (da === db && a < b);
  }

  peek(): number {
    return this.length > 0 ? this.items.get(0) : -1;
  }

  push(slot: number): void {
    this.items.reserve(this.length + 1);
    let index = this.length++;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const above = this.items.get(parent);
      if (!this.before(slot, above)) break;
      this.items.set(index, above);
      index = parent;
    }
    this.items.set(index, slot);
  }

  pop(): number {
    const top = this.items.get(0);
    const last = this.items.get(--this.length);
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= this.length) break;
      const right = left + 1;
      const child = right < this.length && this.before(this.items.get(right), this.items.get(left)) ? right : left;
      const below = this.items.get(child);
      if (!this.before(below, last)) break;
      this.items.set(index, below);
      index = child;
    }
    if (this.length > 0) this.items.set(index, last);
    if (this.length === 0) this.items = new Column(Uint32Array);
    return top;
  }

  /** Slots renumbered (ended ones dropped, order kept): the heap's order holds as it is. */
  renumber(mapping: Int32Array): void {
    for (let index = 0; index < this.length; index += 1) this.items.set(index, mapping[this.items.get(index)]!);
  }
}

/** Deliveries staged with their event: pending once committed, which answers those this daemon holds now. */
export interface StagedDeliveries {
  commit(): Delivery[];
  retract(): Promise<void>;
}

export interface OutboxOptions {
  /** Deliveries a publish hands the dispatcher at most while it holds others (in-process ones always): the rest wait for a claim. */
  holdAtMost?: number;
  /** Lines of slack before a compaction (COMPACT_SLACK; tests set less). */
  compactSlack?: number;
  /** Journal bytes between two checkpoints (CHECKPOINT_BYTES; tests set less). */
  checkpointBytes?: number;
}

/** What a checkpoint takes at one moment (see Outbox.snapshot), written out afterwards. */
interface Snapshot {
  header: Omit<IndexHeader, 'slots'>;
  /** Every slot's columns as they were (`Slots.columns` order), the dead ones too. */
  columns: IndexColumn[];
  length: number;
  /** False once the journal was rewritten since (see CheckpointSchedule.current). */
  current: () => boolean;
}

/**
 * The durable outbox: every pending delivery, in a journal (outbox.log),
 * indexed in memory by a fixed-size entry each (see Slots); a payload is read
 * back when its delivery is claimed. Adding deliveries is durable before it
 * resolves (a publish is acknowledged only after that). Attempt results are
 * journalled without waiting: a crash may lose the last of them, and then a
 * delivery runs once more than needed (at least once, never lost). The
 * journal is compacted (copied line by line, pending ones only) when it has
 * grown well past the pending set.
 */
export class Outbox {
  private slots = new Slots();
  private readonly groupIds = new Map<string, number>();
  private readonly heaps: SlotHeap[] = [];
  /** Where the next claim starts its round over the groups. */
  private turn = 0;
  private live = 0;
  /** No live slot below it: the oldest pending delivery is at or after it. */
  private firstLive = 0;
  /** Runs this daemon holds (handed to the dispatcher), by key. */
  private readonly held = new Map<string, { delivery: Delivery; slot: number }>();
  /** Runs that ended, until `done` (their record is on disk). */
  private readonly finishing = new Map<string, { delivery: Delivery; slot: number }>();
  /** `d` lines not yet on disk (their slot's offset is the previous line's), by slot. */
  private readonly unwritten = new Map<number, { line: DeliveryLine; version: number }>();
  private version = 0;
  /** Pending replays, by the dead letter they replay. */
  private readonly replays = new Map<string, number>();
  /** Changes with each renumbering of the slots: a line written for an earlier numbering is ignored. */
  private epoch = 0;
  /** Workspaces by their number in `slots.workspaces`, and the other way. */
  private readonly workspaceNumbers = new Map<string, number>();
  private readonly workspaceNames: string[] = [];
  /** Set once `startFingerprints` answered. */
  private fingerprinted = false;
  /** Cleared when a line could not be written: the journal then says less than memory does, and no index is written any more. */
  private indexable = true;
  /** Stagings neither committed nor retracted, by their lines' spans (known once written). */
  private readonly openStagings = new Set<Array<LineSpan | null>>();
  private readonly checkpoints: CheckpointSchedule;
  /** When the oldest pending delivery was queued, read from its line while it stays the oldest. */
  private oldest = { epoch: -1, slot: -1, at: 0 };
  /** Lines in the journal. */
  private journalLines = 0;
  /** Lines appended lazily and not yet written (or failed). */
  private linesInFlight = 0;
  /** Stagings neither committed nor retracted. */
  private staged = 0;
  private compacting: Promise<void> | null = null;
  private readonly holdAtMost: number;
  private readonly compactSlack: number;
  private compactionEnded: () => void = () => undefined;

  private log!: AppendLog<Line>;

  private constructor(
    private readonly reportError: (error: unknown) => void,
    options: OutboxOptions,
  ) {
    this.holdAtMost = options.holdAtMost ?? DEFAULT_HOLD_AT_MOST;
    this.compactSlack = options.compactSlack ?? COMPACT_SLACK;
    this.checkpoints = new CheckpointSchedule(() => this.log, options.checkpointBytes ?? CHECKPOINT_BYTES, () => this.checkpoint(), reportError);
  }

  /**
   * Reads the last checkpoint (see checkpoint) when the journal still begins
   * with what it covers, and replays the journal after it; without one, the
   * whole journal. Of the lines replayed, `d` and `x` lines are parsed,
   * payloads only located (their lines are not parsed). A journal in the old
   * format (whole deliveries) is rewritten first; subscriber URLs found in
   * clear are masked (the dispatcher takes the real URL from the
   * subscription) and the journal rewritten without them.
   */
  static async open(file: string, reportError: (error: unknown) => void, options: OutboxOptions = {}): Promise<Outbox> {
    const outbox = new Outbox(reportError, options);
    const index = readJournalCheckpoint<IndexHeader>(file, (header) => (header.version === INDEX_VERSION ? header.slots * rowBytes(outbox.slots.indexed) : -1));
    let from = 0;
    if (index) {
      outbox.restore(index);
      from = index.header.journalBytes;
      outbox.checkpoints.restored(from);
    } else if (await isLegacy(file)) await migrateLegacy(file);
    const clear = await outbox.replay(file, from);
    if (clear.size > 0) await outbox.compact(clear);
    // After a start that replayed much, the next crash need not.
    outbox.checkpointWhenDue();
    return outbox;
  }

  /**
   * Replays the journal from byte `from` on (0, or the end of what a restored
   * checkpoint covers) into the index (see open); answers the slots whose
   * subscriber URL shows credentials.
   */
  private async replay(file: string, from: number): Promise<Set<number>> {
    if (from > 0 && (await stat(file)).size === from) {
      // A clean stop's index: nothing after it.
      this.log = await AppendLog.resume<Line>(file, from);
      return this.scheduleReplayed(new Map(), new Set());
    }
    /** Runs by the fingerprints of their id and replay count (see runHash): those restored, then those replayed. */
    const runs = new FingerprintTable();
    for (const slot of this.liveSlots()) runs.setFingerprinted(runHash(this.slots.idHashes.get(slot), this.slots.replayCounts.get(slot)), this.slots.checks.get(slot), slot);
    /** Payload lines by event id: their number, for where they are in `payloadSpans`. */
    const payloads = new FingerprintTable();
    const payloadSpans = { offsets: new Column(Float64Array), lengths: new Column(Uint32Array), length: 0 };
    const clear = new Set<number>();
    const replaying = new Map<string, number>();
    // Most lines name one of a few subscriber URLs: each is looked at once.
    let lastUrl: string | null | undefined;
    let lastShows = false;
    const showsInClear = (url: string | null | undefined) => {
      if (url !== lastUrl) [lastUrl, lastShows] = [url, showsCredentials(url ?? null)];
      return lastShows;
    };
    this.log = await AppendLog.open<Line, ReplayedLine>(
      file,
      (line, span) => {
        this.journalLines += 1;
        if (line.t === 'd') {
          // A run is looked up, and set when new: its fingerprints are taken once.
          const [keyHash, keyCheck] = [runHash(hash32(line.id), line.rc), hash32b(line.id)];
          let slot = runs.getFingerprinted(keyHash, keyCheck);
          if (slot < 0 || this.slots.states.get(slot) === DEAD) {
            const payload = payloads.get(line.ev);
            if (payload < 0) {
              this.reportError(new Error(`${file}: the payload of delivery ${line.id} (event ${line.ev}) is missing; the delivery is dropped`));
              return;
            }
            const payloadSpan = { offset: payloadSpans.offsets.get(payload), length: payloadSpans.lengths.get(payload) };
            slot = this.newSlot(line, payloadSpan, span.offset, WAITING);
            runs.setFingerprinted(keyHash, keyCheck, slot);
          } else {
            this.slots.due.set(slot, line.due);
            this.slots.lines.set(slot, span.offset);
          }
          if (line.dl !== undefined) replaying.set(line.dl, slot);
          if (showsInClear(line.sub.serviceBaseUrl)) clear.add(slot);
        } else if (line.t === 'x') {
          const slot = runs.getFingerprinted(runHash(hash32(line.id), line.rc), hash32b(line.id));
          if (slot >= 0 && this.slots.states.get(slot) !== DEAD) {
            this.slots.states.set(slot, DEAD);
            this.live -= 1;
          }
        }
      },
      {
        decode: runLineReader(),
        opaque: {
          prefix: PAYLOAD_PREFIX,
          onLine: (span, text) => {
            const payload = payloadSpans.length++;
            payloadSpans.offsets.reserve(payloadSpans.length);
            payloadSpans.lengths.reserve(payloadSpans.length);
            payloadSpans.offsets.set(payload, span.offset);
            payloadSpans.lengths.set(payload, span.length);
            payloads.set(payloadEventId(text), payload);
            this.journalLines += 1;
          },
        },
        from,
      },
    );
    return this.scheduleReplayed(replaying, clear);
  }

  /**
   * After the start's replay: pending replays of the runs still live, ended
   * runs dropped from the index, every live one waiting in its group.
   * Answers `clear` renumbered.
   */
  private scheduleReplayed(replaying: ReadonlyMap<string, number>, clear: ReadonlySet<number>): Set<number> {
    for (const [letterId, slot] of replaying) this.replays.set(letterId, slot);
    for (const [letterId, slot] of this.replays) if (this.slots.states.get(slot) === DEAD) this.replays.delete(letterId);
    const mapping = this.live < this.slots.length ? this.renumber() : null;
    for (const slot of this.liveSlots()) this.heaps[this.slots.groups.get(slot)]!.push(slot);
    return new Set([...clear].map((slot) => (mapping ? mapping[slot]! : slot)).filter((slot) => slot >= 0));
  }

  /** A checkpoint (see checkpoint): every pending run then, waiting again, as a replay of what it covers would find it. */
  private restore({ header, take }: IndexReader<IndexHeader>): void {
    const count = header.slots;
    const { slots } = this;
    slots.length = count;
    restoreColumns(take, slots.indexed, count);
    slots.states.assign(new Uint8Array(count).fill(WAITING));
    for (const key of header.groups) {
      this.groupIds.set(key, this.heaps.length);
      this.heaps.push(new SlotHeap(() => this.slots));
    }
    for (const name of header.workspaces) {
      this.workspaceNumbers.set(name, this.workspaceNames.length);
      this.workspaceNames.push(name);
    }
    for (const [letterId, slot] of header.replays) this.replays.set(letterId, slot);
    this.live = count;
    this.journalLines = header.journalLines;
  }

  /**
   * Writes a checkpoint (outbox.idx): the pending runs' columns, about 46
   * bytes a pending delivery, as of a byte of the journal, so that a start
   * reads it instead of the journal up to there and replays only what
   * follows. Taken each time the journal has grown by `checkpointBytes`
   * (see checkpointWhenDue) and at a clean stop; written out a few megabytes
   * a turn. Never once a line failed to be written (the journal then says
   * less than memory): the next start replays the journal after the last
   * checkpoint, or all of it.
   */
  private async checkpoint(): Promise<void> {
    if (!this.indexable || this.compacting) return;
    const taken = this.snapshot();
    if (!taken) return;
    const { header, columns, length, current } = taken;
    // The pending runs only, renumbered in the index alone (the index in memory keeps its numbers).
    // Positions are taken now: a renumbering meanwhile replaces the slots' columns.
    const { slots } = this;
    const states = columns[slots.columns.indexOf(slots.states)]!;
    const numbers = new Int32Array(length).fill(-1);
    let count = 0;
    for (let slot = 0; slot < length; slot += 1) if (states[slot] !== DEAD) numbers[slot] = count++;
    const live: IndexColumn[] = [];
    for (const column of slots.indexed) {
      const values = columns[slots.columns.indexOf(column)]!;
      const kept = new (column.kind as new (length: number) => IndexColumn)(count);
      for (let slot = 0; slot < length; slot += 1) if (numbers[slot]! >= 0) kept[numbers[slot]!] = values[slot]!;
      live.push(kept);
      await nextTurn();
    }
    const replays = header.replays.flatMap(([letterId, slot]): Array<[string, number]> => (numbers[slot]! >= 0 ? [[letterId, numbers[slot]!]] : []));
    await writeIndexFileInTurns(indexFileOf(this.log.file), { ...header, slots: count, replays }, live, () => current() && this.indexable);
  }

  /**
   * What a checkpoint holds, taken at once: the columns of every slot, and
   * the byte of the journal they are as of. That byte is the journal's size,
   * or the first line of a staging still open if earlier (its runs are not in
   * the slots yet, and its lines are replayed after the checkpoint). A run
   * whose latest line is not written yet gets the due time of the line that
   * is (the one the slot points to). Null when that line cannot be read.
   */
  private snapshot(): Snapshot | null {
    const file = this.log.file;
    let bytes = this.log.byteSize;
    for (const spans of this.openStagings) if (spans[0]) bytes = Math.min(bytes, spans[0].offset);
    const { slots } = this;
    const columns = slots.columns.map((column) => column.copyOut(slots.length) as IndexColumn);
    const due = columns[slots.columns.indexOf(slots.due)]!;
    try {
      for (const slot of this.unwritten.keys()) due[slot] = (JSON.parse(this.log.readLine(slots.lines.get(slot))) as DeliveryLine).due;
      return {
        header: {
          version: INDEX_VERSION,
          journalLines: this.journalLines,
          groups: [...this.groupIds.keys()],
          workspaces: [...this.workspaceNames],
          replays: [...this.replays],
          ...journalMarkAt(file, bytes),
        },
        columns,
        length: slots.length,
        current: this.checkpoints.current(),
      };
    } catch (error) {
      this.reportError(error);
      return null;
    }
  }

  /** A checkpoint once the journal has grown enough (see CheckpointSchedule), not while it is compacted or says less than memory. */
  private checkpointWhenDue(): void {
    this.checkpoints.due(!this.compacting && this.indexable);
  }

  /** Pending deliveries (waiting, held or ending until their record is on disk). */
  get size(): number {
    return this.live;
  }

  /** When the oldest pending delivery was queued (epoch ms), or null. */
  oldestEnqueuedAt(): number | null {
    while (this.firstLive < this.slots.length && this.slots.states.get(this.firstLive) === DEAD) this.firstLive += 1;
    if (this.firstLive >= this.slots.length) return null;
    const { oldest } = this;
    if (oldest.epoch !== this.epoch || oldest.slot !== this.firstLive) {
      const slot = this.firstLive;
      let enqueuedAt: string;
      try {
        enqueuedAt = this.unwritten.get(slot)?.line.enq ?? (JSON.parse(this.log.readLine(this.slots.lines.get(slot))) as DeliveryLine).enq;
      } catch (error) {
        this.reportError(error);
        return null;
      }
      this.oldest = { epoch: this.epoch, slot, at: Date.parse(enqueuedAt) };
    }
    return this.oldest.at;
  }

  /** Whether this run of the delivery is still this daemon's to attempt. */
  holds(delivery: Delivery): boolean {
    return this.held.get(keyOf(delivery))?.delivery === delivery;
  }

  /** Whether a replay of this dead letter is pending. */
  replaysLetter(deadLetterId: string): boolean {
    return this.replays.has(deadLetterId);
  }

  /** Durable: resolves once every delivery is on disk; answers those this daemon holds (every one when `holdAll`). */
  async add(deliveries: readonly Delivery[], holdAll = false): Promise<Delivery[]> {
    return (await this.stage(deliveries, holdAll)).commit();
  }

  /**
   * The first half of `add`, for a write that spans files (a publish: its
   * event line too): resolves once the deliveries and their payload are on
   * disk, and they are pending only once committed. Retracting withdraws their
   * lines from the journal, so that the next start does not resume them.
   * Until one or the other, the journal is not compacted (a compaction would
   * move the lines). Deliveries of one event share one payload line.
   */
  async stage(deliveries: readonly Delivery[], holdAll = false): Promise<StagedDeliveries> {
    if (deliveries.length === 0) return { commit: () => [], retract: async () => undefined };
    const lines: Line[] = [];
    /** For each delivery, the index of its payload line and of its own. */
    const places: Array<{ payload: number; line: number }> = [];
    let event: CarriedEvent | null = null;
    let payload = -1;
    for (const delivery of deliveries) {
      if (delivery.event !== event) {
        event = delivery.event;
        const whole = event.atHand;
        if (!whole) throw new Error(`delivery ${delivery.id} is queued without its event`);
        payload = lines.push({ t: 'p', id: event.id, e: whole }) - 1;
      }
      places.push({ payload, line: lines.push(lineOf(delivery)) - 1 });
    }
    const spans: Array<LineSpan | null> = [];
    this.staged += 1;
    this.openStagings.add(spans);
    try {
      await this.log.appendAll(lines, (index, span) => (spans[index] = span));
    } catch (error) {
      this.staged -= 1;
      this.openStagings.delete(spans);
      this.compactWhenDue();
      throw error;
    }
    let held: Delivery[] = [];
    const write = stagedWrite(
      'staged deliveries',
      () => {
        this.staged -= 1;
      },
      () => {
        this.openStagings.delete(spans);
        this.journalLines += lines.length;
        held = deliveries.filter((delivery, index) => {
          const { payload, line } = places[index]!;
          const hold = holdAll || delivery.subscriber.kind === 'IN_PROCESS' || this.held.size < this.holdAtMost;
          // A span is null only where a rewrite superseded the line; none runs while deliveries are staged.
          const slot = this.newSlot(lines[line] as DeliveryLine, spans[payload]!, spans[line]!.offset, hold ? HELD : WAITING);
          if (hold) this.held.set(keyOf(delivery), { delivery, slot });
          else this.heaps[this.slots.groups.get(slot)]!.push(slot);
          if (delivery.deadLetterId !== undefined) this.replays.set(delivery.deadLetterId, slot);
          return hold;
        });
        this.compactWhenDue();
      },
      async () => {
        try {
          await this.log.retract(lines.flatMap((record, index) => (spans[index] ? [{ span: spans[index]!, record }] : [])));
        } finally {
          // Until blanked, its lines bound what a checkpoint covers.
          this.openStagings.delete(spans);
          this.compactWhenDue();
        }
      },
    );
    return {
      commit: () => {
        write.commit();
        return held;
      },
      retract: () => write.retract(),
    };
  }

  /**
   * Up to `limit` deliveries due by `now` that no one holds, now held: the
   * earliest due of each fairness group in turn (a group's backlog does not
   * make another group wait behind it). Each is read back from the journal.
   */
  claim(limit: number, now: number): Delivery[] {
    const claimed: Delivery[] = [];
    // While a compaction copies the journal, appends wait for it in memory: attempts on the backlog (each
    // appends a line) wait too, and the copy gets the time. `onCompacted` says when to claim again.
    if (this.compacting) return claimed;
    const groups = this.heaps.length;
    let idle = 0;
    while (claimed.length < limit && idle < groups) {
      const group = this.turn;
      this.turn = (this.turn + 1) % groups;
      const heap = this.heaps[group]!;
      const slot = heap.peek();
      if (slot < 0 || this.slots.due.get(slot) > now) {
        idle += 1;
        continue;
      }
      idle = 0;
      heap.pop();
      const delivery = this.load(slot);
      if (!delivery) continue;
      this.slots.states.set(slot, HELD);
      this.held.set(keyOf(delivery), { delivery, slot });
      claimed.push(delivery);
    }
    return claimed;
  }

  /** When the earliest waiting delivery is due (epoch ms), or null (also while a compaction runs: see `claim`). */
  nextDueAt(): number | null {
    if (this.compacting) return null;
    let next = Number.POSITIVE_INFINITY;
    for (const heap of this.heaps) {
      const slot = heap.peek();
      if (slot >= 0) next = Math.min(next, this.slots.due.get(slot));
    }
    return Number.isFinite(next) ? next : null;
  }

  /**
   * A held run goes back to waiting, due at `delivery.nextAttemptAt`, its
   * state (attempts, last error) journalled: a failed attempt, or one not
   * made (shutdown, or its dead letter could not be stored).
   */
  rescheduled(delivery: Delivery): void {
    const key = keyOf(delivery);
    const entry = this.held.get(key);
    if (entry?.delivery !== delivery) return;
    this.held.delete(key);
    const { slot } = entry;
    this.slots.due.set(slot, delivery.nextAttemptAt);
    this.slots.states.set(slot, WAITING);
    this.heaps[this.slots.groups.get(slot)]!.push(slot);
    this.journalLine(slot, lineOf(delivery));
  }

  /** Delivered or dead-lettered: no longer held, still pending until `done`. */
  finished(delivery: Delivery): void {
    const key = keyOf(delivery);
    const entry = this.held.get(key);
    if (entry?.delivery !== delivery) return;
    this.held.delete(key);
    this.finishing.set(key, entry);
    this.slots.states.set(entry.slot, FINISHING);
  }

  /** Its record is on disk: the run leaves the outbox. */
  done(delivery: Delivery): void {
    const key = keyOf(delivery);
    const entry = this.finishing.get(key) ?? this.held.get(key);
    if (entry?.delivery !== delivery) return;
    this.finishing.delete(key);
    this.held.delete(key);
    this.slots.states.set(entry.slot, DEAD);
    this.unwritten.delete(entry.slot);
    this.live -= 1;
    if (delivery.deadLetterId !== undefined && this.replays.get(delivery.deadLetterId) === entry.slot) this.replays.delete(delivery.deadLetterId);
    this.journalLines += 1;
    this.linesInFlight += 1;
    this.log.appendLazily({ t: 'x', id: delivery.id, rc: delivery.replayCount }, this.lineFailed, this.lineLanded);
    this.compactWhenDue();
  }

  /**
   * The live slots in the order of their latest `d` lines in the journal
   * (those not yet written first), so that reading them all is one pass.
   * Each live slot's line offset is distinct: the offsets are sorted
   * natively and each slot put at its offset's rank.
   */
  private slotsInJournalOrder(): Uint32Array {
    const offsets = new Float64Array(this.live);
    let count = 0;
    for (let slot = 0; slot < this.slots.length; slot += 1) {
      if (this.slots.states.get(slot) !== DEAD) offsets[count++] = this.unwritten.has(slot) ? slot - this.slots.length : this.slots.lines.get(slot);
    }
    const sorted = offsets.slice(0, count).sort();
    const order = new Uint32Array(count);
    for (let slot = 0, index = 0; slot < this.slots.length; slot += 1) {
      if (this.slots.states.get(slot) !== DEAD) order[binarySearch(sorted, count, offsets[index++]!)] = slot;
    }
    return order;
  }

  /**
   * Every pending run as found at `open`, by two fingerprints of its id and
   * its workspace, without a read of the journal (for reconciling the
   * records: see DeliveryRecords.reconcile); `ref` loads it (`loadRuns`).
   * Once, before anything else changes the outbox.
   */
  startFingerprints(): Iterable<PendingFingerprint<number>> {
    if (this.fingerprinted) throw new Error('the outbox gives its start fingerprints once, right after it is opened');
    this.fingerprinted = true;
    return this.fingerprints();
  }

  private *fingerprints(): Generator<PendingFingerprint<number>> {
    const { slots } = this;
    for (let slot = 0; slot < slots.length; slot += 1) {
      if (slots.states.get(slot) === DEAD) continue;
      yield { idHash: slots.idHashes.get(slot), check: slots.checks.get(slot), workspaceId: this.workspaceNames[slots.workspaces.get(slot)]!, ref: slot };
    }
  }

  /** The runs `startFingerprints` named, whole (their payloads read back). */
  loadRuns(slots: readonly number[]): Delivery[] {
    return slots.flatMap((slot) => this.load(slot) ?? []);
  }

  /**
   * Every pending delivery, whole: read back from the journal in its order
   * (as this daemon holds it, when it does). For `platform db import` and tests.
   * Synchronous between two steps of the iteration: no compaction runs.
   */
  *values(): Generator<Delivery> {
    for (const slot of this.slotsInJournalOrder()) {
      const read = this.load(slot);
      if (read) yield (this.held.get(keyOf(read)) ?? this.finishing.get(keyOf(read)))?.delivery ?? read;
    }
  }

  /** `then` runs after each compaction that started while the daemon ran: claims resume. */
  onCompacted(then: () => void): void {
    this.compactionEnded = then;
  }

  /** Resolves once a compaction in progress, if any, has ended. */
  async compacted(): Promise<void> {
    while (this.compacting) await this.compacting;
  }

  /** Every line written, then a checkpoint at the journal's end: the next start reads no journal. */
  async close(): Promise<void> {
    await this.checkpoints.stop();
    await this.compacted();
    await this.log.close();
    await this.checkpoint().catch(this.reportError);
  }

  // The index

  private newSlot(line: ReplayedRun, payload: LineSpan, offset: number, state: number): number {
    const slot = this.slots.add();
    const groupKey = fairnessKeyOf(line.sub);
    let group = this.groupIds.get(groupKey);
    if (group === undefined) {
      group = this.heaps.length;
      this.groupIds.set(groupKey, group);
      this.heaps.push(new SlotHeap(() => this.slots));
    }
    this.slots.idHashes.set(slot, hash32(line.id));
    this.slots.replayCounts.set(slot, line.rc & 0xff);
    this.slots.states.set(slot, state);
    this.slots.groups.set(slot, group);
    this.slots.due.set(slot, line.due);
    this.slots.lines.set(slot, offset);
    this.slots.payloads.set(slot, payload.offset);
    this.slots.payloadLengths.set(slot, payload.length);
    this.slots.checks.set(slot, hash32b(line.id));
    let workspace = this.workspaceNumbers.get(line.ws);
    if (workspace === undefined) {
      workspace = this.workspaceNames.push(line.ws) - 1;
      this.workspaceNumbers.set(line.ws, workspace);
    }
    this.slots.workspaces.set(slot, workspace);
    this.live += 1;
    return slot;
  }

  private *liveSlots(): Generator<number> {
    for (let slot = 0; slot < this.slots.length; slot += 1) if (this.slots.states.get(slot) !== DEAD) yield slot;
  }

  /**
   * Drops ended runs from the index, keeping the order: answers each old
   * slot's new number (-1: dropped). Lines in flight for the old numbering
   * are ignored when they land (see journalLine); a compaction gives their
   * slots the lines it writes.
   */
  private renumber(): Int32Array {
    const old = this.slots;
    const mapping = new Int32Array(old.length).fill(-1);
    const slots = new Slots();
    for (let slot = 0; slot < old.length; slot += 1) if (old.states.get(slot) !== DEAD) slots.length += 1;
    for (const column of slots.columns) column.reserve(slots.length);
    const from = old.columns;
    const to = slots.columns;
    let next = 0;
    for (let slot = 0; slot < old.length; slot += 1) {
      if (old.states.get(slot) === DEAD) continue;
      mapping[slot] = next;
      for (let column = 0; column < from.length; column += 1) to[column]!.set(next, from[column]!.get(slot));
      next += 1;
    }
    this.slots = slots;
    this.epoch += 1;
    this.firstLive = 0;
    for (const heap of this.heaps) heap.renumber(mapping);
    for (const entries of [this.held, this.finishing]) for (const entry of entries.values()) entry.slot = mapping[entry.slot]!;
    for (const [letterId, slot] of this.replays) this.replays.set(letterId, mapping[slot]!);
    const unwritten = [...this.unwritten];
    this.unwritten.clear();
    for (const [slot, entry] of unwritten) if (mapping[slot]! >= 0) this.unwritten.set(mapping[slot]!, entry);
    return mapping;
  }

  /** The run in this slot, read back from the journal, its event's body left there; null (and dropped, reported) when its lines do not match. */
  private load(slot: number): Delivery | null {
    try {
      const line = this.unwritten.get(slot)?.line ?? (JSON.parse(this.log.readLine(this.slots.lines.get(slot))) as DeliveryLine);
      if (line.t !== 'd' || hash32(line.id) !== this.slots.idHashes.get(slot) || (line.rc & 0xff) !== this.slots.replayCounts.get(slot)) {
        throw new Error(`the journal does not hold the delivery indexed at byte ${this.slots.lines.get(slot)}`);
      }
      // A line written before the event key was kept: the event is read now, once.
      const event =
        line.ek === undefined
          ? CarriedEvent.of(JSON.parse(this.readBody(slot, line).toString('utf8')) as PlatformEvent)
          : CarriedEvent.stored(line.ev, line.ws, line.ek, this.bodyReader(slot, line));
      return deliveryOf(line, event);
    } catch (error) {
      this.drop(slot, `a pending delivery could not be read back and is dropped: ${error instanceof Error ? error.message : String(error)}`);
      return null;
    }
  }

  /**
   * Reads the body of the run in `slot` when called: where it is then (a
   * compaction may have moved it), found by its key while it is held.
   */
  private bodyReader(slot: number, line: DeliveryLine): () => Promise<Buffer> {
    const epoch = this.epoch;
    const key = keyOf({ id: line.id, replayCount: line.rc });
    return async () => {
      const now = this.held.get(key)?.slot ?? (this.epoch === epoch ? slot : -1);
      if (now < 0) throw new Error(`delivery ${line.id} moved in the journal since it was read; it is read again at its next claim`);
      try {
        return this.readBody(now, line);
      } catch (error) {
        this.held.delete(key);
        this.drop(now, `a pending delivery's payload could not be read back and the delivery is dropped: ${error instanceof Error ? error.message : String(error)}`);
        throw error;
      }
    };
  }

  /** The body a subscriber receives, from the `p` line of the run in `slot`. */
  private readBody(slot: number, line: DeliveryLine): Buffer {
    const offset = this.slots.payloads.get(slot);
    const length = this.slots.payloadLengths.get(slot);
    const suffix = Buffer.from(`,"workspaceId":${JSON.stringify(line.ws)}}`);
    const body = bodyOfPayloadLine(this.log.readBytes(offset, length, length - 2 + suffix.length), length, line.ev, suffix);
    if (!body) throw new Error(`the payload of delivery ${line.id} is not in the journal where it was written`);
    return body;
  }

  private drop(slot: number, message: string): void {
    this.reportError(new Error(`outbox.log: ${message}`));
    if (this.slots.states.get(slot) === DEAD) return;
    this.slots.states.set(slot, DEAD);
    this.live -= 1;
  }

  // The journal

  private readonly lineFailed = (error: unknown): void => {
    this.linesInFlight -= 1;
    this.indexable = false;
    this.reportError(error);
  };

  private readonly lineLanded = (): void => {
    this.linesInFlight -= 1;
    this.compactWhenDue();
  };

  /** A run's new state, journalled lazily; until its line is on disk, memory holds it (see `unwritten`). */
  private journalLine(slot: number, line: DeliveryLine): void {
    const version = ++this.version;
    const epoch = this.epoch;
    this.unwritten.set(slot, { line, version });
    this.journalLines += 1;
    this.linesInFlight += 1;
    this.log.appendLazily(line, this.lineFailed, (span) => {
      if (span && epoch === this.epoch && this.unwritten.get(slot)?.version === version) {
        this.unwritten.delete(slot);
        this.slots.lines.set(slot, span.offset);
      }
      this.lineLanded();
    });
  }

  /**
   * Compacts the journal once it holds well more lines than the pending runs
   * need (attempts and ended runs), or drops ended runs from the index once
   * they are many. Neither while deliveries are staged (their lines would move).
   */
  private compactWhenDue(): void {
    this.checkpointWhenDue();
    if (this.compacting || this.staged > 0) return;
    if (this.journalLines > 4 * this.live + this.compactSlack) {
      this.compacting = this.compact(new Set())
        .catch(this.reportError)
        .finally(() => {
          this.compacting = null;
          this.compactionEnded();
        });
    } else if (this.slots.length - this.live > this.live / 4 + INDEX_SLACK && this.linesInFlight === 0) {
      this.renumber();
    }
  }

  /**
   * Rewrites the journal with the pending runs only: their payloads and the
   * latest `d` line of each, copied from the current file in the order of
   * the file (one sequential pass), then the `d` lines memory holds (not yet
   * on disk, or to be masked: `masking`). The index is renumbered at once;
   * its offsets switch to the new file when it replaces the old one (until
   * then reads go to the old one).
   */
  private async compact(masking: ReadonlySet<number>): Promise<void> {
    this.checkpoints.rewriting();
    this.renumber();
    const count = this.slots.length;
    /** Slots whose `d` line is written from memory, and the version of it that is. */
    const fromMemory = new Map<number, { text: string; version: number | null }>();
    const copied = new Float64Array(2 * count);
    let copies = 0;
    for (let slot = 0; slot < count; slot += 1) {
      copied[copies++] = this.slots.payloads.get(slot);
      const unwritten = this.unwritten.get(slot);
      if (unwritten) fromMemory.set(slot, { text: JSON.stringify(unwritten.line), version: unwritten.version });
      else if (masking.has(slot)) {
        const line = JSON.parse(this.log.readLine(this.slots.lines.get(slot))) as DeliveryLine;
        line.sub = { ...line.sub, serviceBaseUrl: maskCredentials(line.sub.serviceBaseUrl!) };
        fromMemory.set(slot, { text: JSON.stringify(line), version: null });
      } else copied[copies++] = this.slots.lines.get(slot);
    }
    // In the order of the file, each line once (the deliveries of one publish share their payload).
    const sorted = copied.subarray(0, copies).sort();
    let unique = 0;
    for (let index = 0; index < sorted.length; index += 1) if (index === 0 || sorted[index] !== sorted[unique - 1]) sorted[unique++] = sorted[index]!;
    const offsets = new Float64Array(unique + fromMemory.size);
    offsets.set(sorted.subarray(0, unique));
    const texts = new Map<number, string>();
    const textIndexes = new Map<number, number>();
    for (const [slot, { text }] of fromMemory) {
      textIndexes.set(slot, unique + texts.size);
      texts.set(unique + texts.size, text);
    }
    const linesBefore = this.journalLines;
    await this.log.rewriteLines({ offsets, texts }, (written) => {
      const moved = (old: number) => written[binarySearch(offsets, unique, old)]!;
      for (let slot = 0; slot < count; slot += 1) {
        this.slots.payloads.set(slot, moved(this.slots.payloads.get(slot)));
        const textIndex = textIndexes.get(slot);
        this.slots.lines.set(slot, textIndex === undefined ? moved(this.slots.lines.get(slot)) : written[textIndex]!);
        const version = fromMemory.get(slot)?.version;
        if (version != null && this.unwritten.get(slot)?.version === version) this.unwritten.delete(slot);
      }
      // The new journal: what was copied, then whatever was appended meanwhile.
      this.journalLines = written.length + (this.journalLines - linesBefore);
    });
  }
}

/** The index of `value` among the first `length` of sorted `values` (it is there). */
function binarySearch(values: Float64Array, length: number, value: number): number {
  let low = 0;
  let high = length - 1;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (values[middle]! < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** `{"t":"d","id":…,"rc":…,"ev":…,"ws":…,["ek":…,]"depth":…,"sub":` as lineOf writes it (only the key may have escaped characters). */
const RUN_LINE_HEAD = /^\{"t":"d","id":"([^"\\]*)","rc":(\d+),"ev":"([^"\\]*)","ws":"([^"\\]*)",(?:"ek":"(?:[^"\\]|\\.)*",)?"depth":\d+,"sub":/;
/** What follows the subscriber: `,"attempts":` cannot occur unescaped inside a string, so its first occurrence ends it. */
const AFTER_SUBSCRIBER = '},"attempts":';
const RUN_LINE_TIMES = /(\d+),"due":(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?),"enq":"([^"\\]*)",/y;
const REPLAY_FIELD = ',"dl":"';

/**
 * Reads the journal's `d` lines at start-up for what the index takes, without
 * parsing their attempts and errors: the subscriber object, the same on most
 * lines, is parsed once per distinct text. A line in any other shape (and
 * every `x` line) is parsed whole.
 */
function runLineReader(): (line: Buffer) => ReplayedLine {
  const subscribers = new Map<string, SubscriberRef>();
  let lastText = '';
  let last: SubscriberRef | undefined;
  return (bytes) => {
    const text = bytes.toString('utf8');
    const head = RUN_LINE_HEAD.exec(text);
    const subscriberEnd = head ? text.indexOf(AFTER_SUBSCRIBER, head[0].length) + 1 : 0;
    RUN_LINE_TIMES.lastIndex = subscriberEnd + AFTER_SUBSCRIBER.length - 1;
    const times = subscriberEnd > 0 ? RUN_LINE_TIMES.exec(text) : null;
    if (!head || !times || !text.endsWith('}')) return JSON.parse(text) as Line;
    const subscriberText = text.slice(head[0].length, subscriberEnd);
    // Runs of one subscriber follow one another: the last one is compared before the map is hashed.
    let sub = subscriberText === lastText ? last : subscribers.get(subscriberText);
    if (!sub) {
      if (subscribers.size >= 10_000) subscribers.clear();
      subscribers.set(subscriberText, (sub = JSON.parse(subscriberText) as SubscriberRef));
    }
    [lastText, last] = [subscriberText, sub];
    // Only a line that ends in a string field, `"dl":"…"}`, replays a dead letter (an error ends in `}}`, none in `l}`).
    const replay = text.endsWith('"}') ? text.lastIndexOf(REPLAY_FIELD) : -1;
    const dl = replay >= 0 ? text.slice(replay + REPLAY_FIELD.length, -2) : undefined;
    if (dl !== undefined && /["\\]/.test(dl)) return JSON.parse(text) as Line;
    return { t: 'd', id: head[1]!, rc: Number(head[2]), ev: head[3]!, ws: head[4]!, sub, due: Number(times[2]), enq: times[3]!, ...(dl === undefined ? {} : { dl }) };
  };
}

/** The event id at the start of a `p` line, read without parsing the event. */
function payloadEventId(line: Buffer): string {
  const end = line.indexOf(0x22, PAYLOAD_PREFIX.length);
  const id = line.toString('utf8', PAYLOAD_PREFIX.length, end);
  // An id with an escaped character: the line is parsed after all.
  return id.includes('\\') ? (JSON.parse(line.toString('utf8')) as PayloadLine).id : id;
}

/**
 * The body a subscriber receives (see CarriedEvent.body), made in place from
 * the `length` bytes of the `p` line `{"t":"p","id":…,"e":{…}}` read into a
 * buffer with room for `suffix` (`,"workspaceId":…}`): the suffix replaces
 * the event's closing brace and the line's. Null when the line is not the
 * payload of event `eventId`.
 */
function bodyOfPayloadLine(line: Buffer, length: number, eventId: string, suffix: Buffer): Buffer | null {
  const head = Buffer.from(`{"t":"p","id":${JSON.stringify(eventId)},"e":{`);
  if (length < head.length + 2 || line.compare(head, 0, head.length, 0, head.length) !== 0) return null;
  if (line[length - 2] !== 0x7d || line[length - 1] !== 0x7d) return null;
  suffix.copy(line, length - 2);
  return line.subarray(head.length - 1, length - 2 + suffix.length);
}

/** A run's `d` line: the delivery without its event. */
function lineOf(delivery: Omit<Delivery, 'event'> & { event: Pick<PlatformEvent, 'id' | 'tenantId' | 'eventKey'> }): DeliveryLine {
  return {
    t: 'd',
    id: delivery.id,
    rc: delivery.replayCount,
    ev: delivery.event.id,
    ws: delivery.event.tenantId,
    ek: delivery.event.eventKey,
    depth: delivery.depth,
    sub: delivery.subscriber,
    attempts: delivery.attempts,
    due: delivery.nextAttemptAt,
    enq: delivery.enqueuedAt,
    first: delivery.firstAttemptAt,
    err: delivery.lastError,
    ...(delivery.redeliveryOf === undefined ? {} : { ro: delivery.redeliveryOf }),
    ...(delivery.deadLetterId === undefined ? {} : { dl: delivery.deadLetterId }),
  };
}

function deliveryOf(line: DeliveryLine, event: CarriedEvent): Delivery {
  return {
    id: line.id,
    event,
    depth: line.depth,
    subscriber: line.sub,
    attempts: line.attempts,
    nextAttemptAt: line.due,
    enqueuedAt: line.enq,
    firstAttemptAt: line.first,
    lastError: line.err,
    replayCount: line.rc,
    ...(line.ro === undefined ? {} : { redeliveryOf: line.ro }),
    ...(line.dl === undefined ? {} : { deadLetterId: line.dl }),
  };
}

/**
 * Numbers by string key during start-up only (runs by key, payloads by event
 * id), as an open-addressing table over columns: two 32-bit fingerprints of
 * the key and the value, 16 bytes an entry plus the table (a false match
 * among a million keys is about one chance in thirty million).
 */
class FingerprintTable {
  private table = new Int32Array(1 << 16).fill(-1);
  private readonly first = new Column(Uint32Array);
  private readonly second = new Column(Uint32Array);
  private readonly values = new Column(Float64Array);
  private count = 0;

  /** The value of `key`, or -1. */
  get(key: string): number {
    return this.getFingerprinted(hash32(key), secondHash(key));
  }

  set(key: string, value: number): void {
    this.setFingerprinted(hash32(key), secondHash(key), value);
  }

  /** `get` by the key's two fingerprints (hash32 and secondHash), when the caller has them. */
  getFingerprinted(a: number, b: number): number {
    const entry = this.find(a, b);
    return entry < 0 ? -1 : this.values.get(entry);
  }

  setFingerprinted(a: number, b: number, value: number): void {
    const found = this.find(a, b);
    if (found >= 0) return this.values.set(found, value);
    const entry = this.count++;
    for (const column of [this.first, this.second, this.values]) column.reserve(this.count);
    this.first.set(entry, a);
    this.second.set(entry, b);
    this.values.set(entry, value);
    if (this.count * 2 > this.table.length) {
      this.table = new Int32Array(this.table.length * 2).fill(-1);
      for (let index = 0; index < this.count; index += 1) this.place(index);
    } else this.place(entry);
  }

  private find(a: number, b: number): number {
    const mask = this.table.length - 1;
    for (let index = a & mask; ; index = (index + 1) & mask) {
      const entry = this.table[index]!;
      if (entry < 0) return -1;
      if (this.first.get(entry) === a && this.second.get(entry) === b) return entry;
    }
  }

  private place(entry: number): void {
    const mask = this.table.length - 1;
    let index = this.first.get(entry) & mask;
    while (this.table[index]! >= 0) index = (index + 1) & mask;
    this.table[index] = entry;
  }
}

/** A second fingerprint, independent of hash32's (a multiplicative mix per code unit). */
function secondHash(text: string): number {
  let hash = 0x9747b28c;
  for (let index = 0; index < text.length; index += 1) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x5bd1e995);
    hash ^= hash >>> 15;
  }
  return hash >>> 0;
}

/** Whether the journal is in the format before payloads were split from deliveries. */
async function isLegacy(file: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
  try {
    const buffer = Buffer.alloc(64 * 1024);
    for (let position = 0; ; ) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) return false;
      let start = 0;
      while (start < bytesRead && (buffer[start] === 0x20 || buffer[start] === 0x0a)) start += 1;
      if (start < bytesRead) {
        const { bytesRead: read } = await handle.read(buffer, 0, 16, position + start);
        const head = buffer.toString('utf8', 0, read);
        return head.startsWith('{"t":"add"') || head.startsWith('{"t":"retry"') || head.startsWith('{"t":"done"');
      }
      position += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

/**
 * Rewrites a journal of the old format (whole deliveries) in the new one,
 * once: the pending deliveries as they were, each event's payload once for
 * the deliveries of it that follow one another, subscriber URLs masked. The
 * old journal held every pending delivery in memory too, so holding them
 * during this one pass costs no more than the old version did.
 */
async function migrateLegacy(file: string): Promise<void> {
  const pending = new Map<string, LegacyDelivery>();
  await replay<LegacyLine>(file, (record) => {
    if (record.t === 'add') pending.set(keyOf(record.delivery), record.delivery);
    else if (record.t === 'done') pending.delete(record.key);
    else {
      const delivery = pending.get(record.key);
      if (!delivery) return;
      delivery.attempts = record.attempts;
      delivery.nextAttemptAt = record.nextAttemptAt;
      delivery.firstAttemptAt = record.firstAttemptAt;
      delivery.lastError = record.lastError;
    }
  });
  await writeFileDurably(file, async (out) => {
    let chunk = '';
    let lastEvent: string | null = null;
    for (const delivery of pending.values()) {
      if (showsCredentials(delivery.subscriber.serviceBaseUrl)) {
        delivery.subscriber = { ...delivery.subscriber, serviceBaseUrl: maskCredentials(delivery.subscriber.serviceBaseUrl) };
      }
      if (delivery.event.id !== lastEvent) {
        lastEvent = delivery.event.id;
        chunk += JSON.stringify({ t: 'p', id: delivery.event.id, e: delivery.event }) + '\n';
      }
      chunk += JSON.stringify(lineOf(delivery)) + '\n';
      if (chunk.length >= WRITE_CHUNK) {
        await out.write(chunk);
        chunk = '';
      }
    }
    if (chunk) await out.write(chunk);
  });
}
