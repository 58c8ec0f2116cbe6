import { closeSync, openSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { AppendLog, replay, stagedWrite, type LineSpan, type StagedWrite } from '../append-log.js';
import { ensurePrivateDir, fsyncDir, isMissing, writeSynced } from '../../files.js';
import { Column, Swap, hash32, readBytes, SWAP_CACHE_BYTES } from '../line-index.js';
import { unbounded } from '../../paging.js';
import type { EventPageQuery, RetentionPolicy } from '../../events/types.js';
import { matchesDeliveryFilter, noDeliveries, type DeliverySummary, type ListedEvent } from '../../events/delivery-summary.js';
import { RecentEvents, type RecentLimits } from './recent.js';
import { readSegmentIndex, removeSegmentIndex, writeSegmentIndex, type IndexedLines } from './segment-index.js';

/** Events a filtered listing looks at in one synchronous step (each batch costs a pass over the workspace's delivery records). */
const FILTER_BATCH = 1024;
const NO_DELIVERIES: Readonly<DeliverySummary> = noDeliveries();

/** An event's place in the log: its segment, occurredAt (ms) and id. The file backend's event cursor says it (see dispatch.ts). */
export interface EventPosition {
  segment: number;
  at: number;
  id: string;
}

/** A page query of the log: it pages on after a position. */
export type LogPageQuery = Omit<EventPageQuery, 'before'> & { before?: EventPosition | undefined };

/** What the index of a segment needs of an event. */
type EventHead = Pick<PlatformEvent, 'id' | 'eventKey' | 'tenantId' | 'occurredAt'>;

/**
 * One workspace's events in one segment, in the order of the file: where each
 * line is, when it occurred and fingerprints of its id and event key, 28
 * bytes an event, in the swap once the segment is sealed (memory then holds
 * none of them but the pages read last). A page is picked here and only its
 * own lines are read.
 */
class WorkspaceLines {
  length = 0;
  /** The oldest occurredAt (ms), for retention. */
  oldest = Number.POSITIVE_INFINITY;
  readonly offsets: Column;
  readonly lengths: Column;
  readonly occurredAt: Column;
  readonly idHashes: Column;
  readonly keyHashes: Column;

  constructor(swap: Swap) {
    this.offsets = new Column(Float64Array, swap);
    this.lengths = new Column(Uint32Array, swap);
    this.occurredAt = new Column(Float64Array, swap);
    this.idHashes = new Column(Uint32Array, swap);
    this.keyHashes = new Column(Uint32Array, swap);
  }

  push(event: EventHead, span: LineSpan): void {
    const index = this.length++;
    const at = Date.parse(event.occurredAt);
    this.offsets.reserve(this.length);
    this.lengths.reserve(this.length);
    this.occurredAt.reserve(this.length);
    this.idHashes.reserve(this.length);
    this.keyHashes.reserve(this.length);
    this.offsets.set(index, span.offset);
    this.lengths.set(index, span.length);
    this.occurredAt.set(index, at);
    this.idHashes.set(index, hash32(event.id));
    this.keyHashes.set(index, hash32(event.eventKey));
    this.oldest = Math.min(this.oldest, at);
  }

  /** A sealed segment's lines grow no more: the spare room goes, and the rest to the swap. */
  seal(): void {
    for (const column of this.columns()) {
      column.trim(this.length);
      column.spill();
    }
  }

  /** A sealed segment's lines as its index file held them (see segment-index.ts), sealed. */
  static indexed(swap: Swap, indexed: IndexedLines): WorkspaceLines {
    const lines = new WorkspaceLines(swap);
    lines.length = indexed.length;
    lines.oldest = indexed.oldest;
    lines.offsets.assign(indexed.offsets);
    lines.lengths.assign(indexed.lengths);
    lines.occurredAt.assign(indexed.occurredAt);
    lines.idHashes.assign(indexed.idHashes);
    lines.keyHashes.assign(indexed.keyHashes);
    lines.seal();
    return lines;
  }

  /** The lines as one array a column, for the segment's index file. */
  toIndex(): IndexedLines {
    return {
      length: this.length,
      oldest: this.oldest,
      offsets: this.offsets.copyOut(this.length) as Float64Array,
      lengths: this.lengths.copyOut(this.length) as Uint32Array,
      occurredAt: this.occurredAt.copyOut(this.length) as Float64Array,
      idHashes: this.idHashes.copyOut(this.length) as Uint32Array,
      keyHashes: this.keyHashes.copyOut(this.length) as Uint32Array,
    };
  }

  /** The segment is gone: its swap space is free. */
  release(): void {
    for (const column of this.columns()) column.release();
  }

  private columns(): Column[] {
    return [this.offsets, this.lengths, this.occurredAt, this.idHashes, this.keyHashes];
  }
}

interface Segment {
  sequence: number;
  file: string;
  count: number;
  /** Lines on disk and not yet committed or retracted (see EventLog.stage). */
  staged: number;
  workspaces: Map<string, WorkspaceLines>;
  /** Whether its columns went to the swap whole: no longer written to, and nothing staged left in it. */
  sealed: boolean;
  /** Whether its index file holds all it indexes (written once sealed). */
  indexed: boolean;
}

export interface EventLogOptions {
  /** A segment is sealed and a new one started after this many events. */
  segmentMaxEvents: number;
  /** What is kept in memory for listing; the listing reads older events from disk. */
  recent: RecentLimits;
}

const SEGMENT_NAME = /^segment-(\d{6,})\.log$/;
const segmentName = (sequence: number) => `segment-${String(sequence).padStart(6, '0')}.log`;

/**
 * Reads lines of segments by span during one synchronous listing, opening
 * each file once. Segments are replaced (compaction) or deleted (retention)
 * only together with their index in one synchronous step, so a listing that
 * never yields reads the files its index describes.
 */
class SegmentReader {
  private readonly fds = new Map<string, number>();

  /** The line as read: a page sends it as it is, without making it a string, parsing it and writing it again. */
  line(segment: Segment, lines: WorkspaceLines, index: number): Buffer {
    let fd = this.fds.get(segment.file);
    if (fd === undefined) this.fds.set(segment.file, (fd = openSync(segment.file, 'r')));
    return readBytes(fd, lines.offsets.get(index), lines.lengths.get(index));
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
  }
}

/**
 * The event log: append-only JSON lines in numbered segment files under
 * <data-dir>/events. An append costs one line in the newest segment, whatever
 * the size of the log. Retention deletes whole expired segments and compacts
 * sealed ones that are partly expired; it never touches the segment being
 * written. Each segment has an index per workspace (WorkspaceLines), and the
 * newest events of each workspace are kept in memory too, within a byte
 * budget (see recent.ts): a page costs its own events, read from memory or
 * by span from disk, never a pass over a segment.
 */
export class EventLog {
  private rolling: Promise<void> | null = null;
  /** Appends handed to the active segment and not yet on disk: they count towards its size. */
  private appendsPending = 0;

  private constructor(
    private readonly dir: string,
    private readonly options: EventLogOptions,
    private readonly segments: Segment[],
    private active: AppendLog<PlatformEvent>,
    private readonly recentEvents: RecentEvents,
    private readonly swap: Swap,
  ) {}

  static async open(dir: string, options: EventLogOptions): Promise<EventLog> {
    await ensurePrivateDir(dir);
    const files = (await readdir(dir)).filter((name) => SEGMENT_NAME.test(name)).sort();
    if (files.length === 0) files.push(segmentName(1));
    const recent = new RecentEvents(options.recent);
    const swap = new Swap(dir, SWAP_CACHE_BYTES);
    const segments: Segment[] = [];
    let active: AppendLog<PlatformEvent> | undefined;
    for (const [index, name] of files.entries()) {
      const segment = emptySegment(dir, name);
      // Start-up reads each line's head and tail, not its payload; the recent events fill again as events are published.
      const onRecord = (head: EventHead, span: LineSpan) => indexInto(segment, head, span, swap);
      if (index === files.length - 1) active = await AppendLog.open<PlatformEvent, EventHead>(segment.file, onRecord, { decode: headOf });
      else {
        // A sealed segment is read from its index file when that holds for it, else read and indexed anew.
        const indexed = readSegmentIndex(segment.file, statSync(segment.file).size);
        if (indexed) {
          for (const [workspaceId, lines] of indexed) segment.workspaces.set(workspaceId, WorkspaceLines.indexed(swap, lines));
          segment.count = [...indexed.values()].reduce((sum, lines) => sum + lines.length, 0);
          segment.sealed = segment.indexed = true;
        } else await replay(segment.file, onRecord, undefined, { decode: headOf });
      }
      segments.push(segment);
    }
    const log = new EventLog(dir, options, segments, active!, recent, swap);
    for (const segment of segments) log.sealWhenSettled(segment);
    return log;
  }

  /** Resolves once the event is on disk; only then is it indexed and listed (a failed write leaves no trace). */
  async append(event: PlatformEvent): Promise<void> {
    (await this.stage(event)).commit();
  }

  /**
   * The first half of `append`, for a write that spans files (a publish: its
   * deliveries too): resolves once the event is on disk, and it is listed only
   * once committed. Retracting withdraws its line, so that the next start
   * does not list it either. Until one or the other, retention leaves its
   * segment alone.
   */
  async stage(event: PlatformEvent): Promise<StagedWrite> {
    if (this.rolling) await this.rolling;
    const segment = this.segments.at(-1)!;
    const log = this.active;
    this.appendsPending += 1;
    segment.staged += 1;
    let span: LineSpan | null;
    try {
      const written = log.append(event);
      if (segment.count + this.appendsPending >= this.options.segmentMaxEvents && !this.rolling) {
        this.rolling = this.roll().finally(() => (this.rolling = null));
        // A failed rotation is answered to the next append, which awaits it (and rotates again), not left unhandled.
        this.rolling.catch(() => undefined);
      }
      span = await written;
    } catch (error) {
      segment.staged -= 1;
      throw error;
    } finally {
      this.appendsPending -= 1;
    }
    return stagedWrite(
      'a staged event',
      () => (segment.staged -= 1),
      () => {
        // A segment is never rewritten while it is being appended to: every append has its span.
        indexInto(segment, event, span!, this.swap);
        this.recentEvents.push(event);
        this.sealWhenSettled(segment);
      },
      () => {
        // The index file leaves the withdrawn line out, as memory does.
        this.sealWhenSettled(segment);
        return log.retract([{ span: span!, record: event }]);
      },
    );
  }

  /**
   * A page of every retained event of the workspace, newest first in the order
   * of the log (segment, then line), after `before` when paging on. That order
   * never changes (retention only removes lines) and new events come before
   * every existing one, so paging from the first page to the last neither skips
   * nor repeats an event. The page is picked from the segments' indexes (the
   * event key by its fingerprint, confirmed on the event), and each event is
   * taken from memory when memory holds it, else read by its span: the cost is
   * the page's, not the log's, and the page ends where `budget` is full (or
   * its chunk is: see PageBudget.startChunk). Synchronous, so that no
   * compaction swaps a file under it: the budget bounds what it reads.
   *
   * Events are taken in batches, each with the summary of its deliveries that
   * `summariesOf` gives for the batch's id fingerprints (one pass over the
   * delivery records; the log alone knows of none). An event whose id's
   * fingerprint no record has has no delivery, known without reading its
   * line; so a delivery filter reads only the lines of events that have
   * deliveries (or share a fingerprint with one). Filtered, one call looks at one
   * batch of FILTER_BATCH events at most, and answers `more` with the position
   * of the last one it looked at: the caller goes on from there after the
   * event loop had its turn.
   *
   * Admits the page's events to `budget` as the JSON of their lines (each
   * line is an event as JSON.stringify wrote it: sent as it is, never parsed
   * but where a fingerprint only narrows down), the summary spliced in at the
   * end; answers whether more follow and the position of the last event
   * decided (admitted, or left out by the filter).
   */
  page(
    workspaceId: string,
    query: LogPageQuery,
    policy: RetentionPolicy,
    now: number,
    budget = unbounded<ListedEvent>(),
    summariesOf: (eventIdHashes: ReadonlySet<number>) => ReadonlyMap<string, DeliverySummary> = () => new Map(),
  ): { more: boolean; last?: EventPosition } {
    const cutoff = Math.max(now - policy.maxAgeMs, query.since ?? Number.NEGATIVE_INFINITY);
    const until = query.until ?? Number.POSITIVE_INFINITY;
    const keyHash = query.eventKey === undefined ? null : hash32(query.eventKey);
    const { before, deliveries: filter } = query;
    // Unfiltered, a batch is what the page can still take (and one more, to know whether more follow).
    let room = filter === undefined ? query.limit - budget.count + 1 : FILTER_BATCH;
    let more = false;
    let last: EventPosition | undefined;
    this.walk(workspaceId, (segment, lines, lineAt) => {
      if (before && segment.sequence > before.segment) return true;
      let start = lines.length - 1;
      let olderThan = Number.POSITIVE_INFINITY;
      if (before?.segment === segment.sequence) {
        const found = indexOf(lines, before, lineAt);
        // The cursor's own event is gone only if retention removed it: then keep what is older than it.
        if (found >= 0) start = found - 1;
        else olderThan = before.at;
      }
      // The last event decided in this segment: its id is read from its line once the segment is done.
      let decided: { index: number; at: number; line?: string | Buffer } | undefined;
      for (let index = start; index >= 0 && !more; ) {
        const batch: Array<{ index: number; at: number; line?: string | Buffer }> = [];
        for (; index >= 0 && batch.length < room; index -= 1) {
          const at = lines.occurredAt.get(index);
          if (at < cutoff || at > until || at >= olderThan) continue;
          if (keyHash === null) batch.push({ index, at });
          else if (lines.keyHashes.get(index) === keyHash) {
            const line = lineAt(index);
            if (fieldOf(line, 'eventKey') === query.eventKey) batch.push({ index, at, line });
          }
        }
        if (batch.length === 0) break;
        room -= batch.length;
        const summaries = summariesOf(new Set(batch.map((candidate) => lines.idHashes.get(candidate.index))));
        const withRecords = new Set([...summaries.keys()].map(hash32));
        for (const candidate of batch) {
          let summary = NO_DELIVERIES;
          if (withRecords.has(lines.idHashes.get(candidate.index))) {
            candidate.line ??= lineAt(candidate.index);
            summary = summaries.get(fieldOf(candidate.line, 'id')) ?? NO_DELIVERIES;
          }
          if (filter !== undefined && !matchesDeliveryFilter(summary, filter)) {
            decided = candidate;
            continue;
          }
          if (budget.count === query.limit || !budget.hasRoom() || !budget.admitJson(withSummary((candidate.line ??= lineAt(candidate.index)), summary))) {
            more = true;
            break;
          }
          decided = candidate;
        }
        // This call's batch is done; what is left is the next call's.
        if (room === 0) more = true;
      }
      if (decided) last = { segment: segment.sequence, at: decided.at, id: fieldOf(decided.line ?? lineAt(decided.index), 'id') };
      return !more;
    });
    return { more, ...(more && last ? { last } : {}) };
  }

  /** One event of the workspace, found by its id's fingerprint (newest segment first); undefined if not retained. */
  find(workspaceId: string, eventId: string): PlatformEvent | undefined {
    const idHash = hash32(eventId);
    let found: PlatformEvent | undefined;
    this.walk(workspaceId, (_segment, lines, lineAt) => {
      for (let index = lines.length - 1; index >= 0 && !found; index -= 1) {
        if (lines.idHashes.get(index) !== idHash) continue;
        const event = JSON.parse(String(lineAt(index))) as PlatformEvent;
        if (event.id === eventId) found = event;
      }
      return !found;
    });
    return found;
  }

  /**
   * Visits the workspace's lines segment by segment, newest first, while
   * `visit` returns true. `eventAt` gives a line's event: from memory when it
   * is among the newest that memory holds (memory holds the workspace's newest
   * events without a gap, so the line's rank from the newest finds it; its id's
   * fingerprint confirms it), else from disk.
   */
  private walk(
    workspaceId: string,
    visit: (segment: Segment, lines: WorkspaceLines, lineAt: (index: number) => string | Buffer) => boolean,
  ): void {
    const reader = new SegmentReader();
    try {
      let newer = 0;
      for (let position = this.segments.length - 1; position >= 0; position -= 1) {
        const segment = this.segments[position]!;
        const lines = segment.workspaces.get(workspaceId);
        if (!lines) continue;
        const rankOfLast = newer + lines.length - 1;
        const lineAt = (index: number) =>
          this.recentEvents.newest(workspaceId, rankOfLast - index, (id) => hash32(id) === lines.idHashes.get(index)) ?? reader.line(segment, lines, index);
        if (!visit(segment, lines, lineAt)) return;
        newer += lines.length;
      }
    } finally {
      reader.close();
    }
  }

  /** Bytes of event JSON held in memory for listing. */
  get recentBytes(): number {
    return this.recentEvents.bytes;
  }

  /** Events on disk, including expired ones not yet removed by retention. */
  get storedCount(): number {
    return this.segments.reduce((sum, segment) => sum + segment.count, 0);
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  /**
   * Keeps, per workspace, only events younger than maxAgeMs and among its newest
   * maxPerWorkspace ("whichever is fewer"). Walks segments newest to oldest,
   * so each workspace's count of newer kept events is known at every segment.
   *
   * Only sealed segments are compacted or deleted: the segment being written
   * stays, even empty (appends need it), and so does one a rotation started
   * while retention ran. A rotation under way is awaited first: until it ends,
   * the segment it seals may still be taking appends.
   */
  async applyRetention(policy: RetentionPolicy, now: number): Promise<{ removedEvents: number; removedIds: Set<string> }> {
    if (this.rolling) await this.rolling;
    const cutoff = now - policy.maxAgeMs;
    const newerKept = new Map<string, number>();
    const removedIds = new Set<string>();
    const emptied = new Set<Segment>();
    let removedEvents = 0;
    const activeIndex = this.segments.length - 1;
    for (let index = activeIndex; index >= 0; index -= 1) {
      const segment = this.segments[index]!;
      const isActive = index === activeIndex;
      const expiresSome = [...segment.workspaces].some(([workspaceId, lines]) => {
        const newer = newerKept.get(workspaceId) ?? 0;
        return newer + lines.length > policy.maxPerWorkspace || lines.oldest < cutoff;
      });
      // A segment with a staged line is left for the next pass: a compaction would list or drop that line.
      if (isActive || !expiresSome || segment.staged > 0) {
        for (const [workspaceId, lines] of segment.workspaces) {
          newerKept.set(workspaceId, (newerKept.get(workspaceId) ?? 0) + lines.length);
        }
        continue;
      }
      removedEvents += await this.compact(index, (event) => {
        const kept = newerKept.get(event.tenantId) ?? 0;
        if (kept >= policy.maxPerWorkspace || Date.parse(event.occurredAt) < cutoff) {
          removedIds.add(event.id);
          return false;
        }
        newerKept.set(event.tenantId, kept + 1);
        return true;
      });
      const compacted = this.segments[index]!;
      if (compacted.count === 0) emptied.add(compacted);
    }
    // Only the segments this run deleted go: a new segment (empty until its first append) stays.
    this.segments.splice(0, this.segments.length, ...this.segments.filter((segment) => !emptied.has(segment)));
    return { removedEvents, removedIds };
  }

  async close(): Promise<void> {
    if (this.rolling) await this.rolling;
    await this.active.close();
    this.swap.close();
  }

  private async roll(): Promise<void> {
    const last = this.segments.at(-1)!;
    const next = emptySegment(this.dir, segmentName(last.sequence + 1));
    const sealed = this.active;
    this.active = await AppendLog.open(next.file, () => undefined);
    this.segments.push(next);
    await sealed.close();
    this.sealWhenSettled(last);
  }

  /**
   * Seals a segment that is no longer written to once no staged line is left
   * in it (one committed later is indexed into it then): its columns go to
   * the swap whole, and its index file is written. The file only spares the
   * next start a read of the segment: one that cannot be written is left out,
   * and that start reads the segment.
   */
  private sealWhenSettled(segment: Segment): void {
    if (segment.staged > 0 || segment === this.segments.at(-1)) return;
    if (!segment.sealed) {
      for (const lines of segment.workspaces.values()) lines.seal();
      segment.sealed = true;
    }
    if (segment.indexed) return;
    try {
      const indexes = new Map([...segment.workspaces].map(([workspaceId, lines]) => [workspaceId, lines.toIndex()]));
      writeSegmentIndex(segment.file, statSync(segment.file).size, indexes);
      segment.indexed = true;
    } catch {
      // Left for the next start to read the segment (a full disk, say); nothing depends on the file.
    }
  }

  /**
   * Rewrites a sealed segment with the events `keep` accepts (visited newest
   * first), deleting it when none remain. Returns how many were dropped. The
   * file, its index and memory change in one synchronous step, so that a
   * listing never reads a span in the wrong file.
   */
  private async compact(index: number, keep: (event: PlatformEvent) => boolean): Promise<number> {
    const segment = this.segments[index]!;
    const events: PlatformEvent[] = [];
    await replay<PlatformEvent>(segment.file, (event) => events.push(event));
    const kept: PlatformEvent[] = [];
    const removed = new Set<string>();
    for (let i = events.length - 1; i >= 0; i -= 1) {
      if (keep(events[i]!)) kept.push(events[i]!);
      else removed.add(events[i]!.id);
    }
    if (removed.size === 0) return 0;
    kept.reverse();
    const rebuilt = emptySegment(this.dir, segmentName(segment.sequence));
    const replace = () => {
      this.segments[index] = rebuilt;
      this.recentEvents.forget(segment.workspaces.keys(), removed);
      for (const lines of segment.workspaces.values()) lines.release();
    };
    // The old index goes first: a crash in between leaves a segment read at the next start, never a stale index.
    removeSegmentIndex(segment.file);
    if (kept.length === 0) {
      unlinkSync(segment.file);
      replace();
    } else {
      const lines: string[] = [];
      let offset = 0;
      for (const event of kept) {
        const line = JSON.stringify(event);
        const length = Buffer.byteLength(line);
        indexInto(rebuilt, event, { offset, length }, this.swap);
        offset += length + 1;
        lines.push(line);
      }
      for (const workspaceLines of rebuilt.workspaces.values()) workspaceLines.seal();
      rebuilt.sealed = true;
      const temp = `${segment.file}.tmp`;
      await writeSynced(temp, lines.join('\n') + '\n');
      renameSync(temp, segment.file);
      replace();
      this.sealWhenSettled(rebuilt);
    }
    await fsyncDir(this.dir);
    return removed.size;
  }
}

/**
 * Every event of the log under `dir`, oldest first (segment by segment, line by
 * line: the order listings follow), read as it streams by rather than indexed,
 * for `platform db import`. `afterChunk` as for `replay`.
 */
export async function replayEventLog(
  dir: string,
  onEvent: (event: PlatformEvent, span: LineSpan) => void,
  afterChunk: () => Promise<void>,
): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (isMissing(error)) return;
    throw error;
  }
  // As EventLog.open orders them.
  for (const name of names.filter((name) => SEGMENT_NAME.test(name)).sort()) await replay<PlatformEvent>(join(dir, name), onEvent, afterChunk);
}

/** The index of the cursor's event in the segment's lines, or -1 when retention removed it. */
function indexOf(lines: WorkspaceLines, position: EventPosition, lineAt: (index: number) => string | Buffer): number {
  const idHash = hash32(position.id);
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    if (lines.occurredAt.get(index) === position.at && lines.idHashes.get(index) === idHash && fieldOf(lineAt(index), 'id') === position.id) return index;
  }
  return -1;
}

/** How far into a line its first fields are looked for: an event's id and key come first. */
const HEAD_BYTES = 512;

/** The event's JSON line with its delivery summary as the last field (the line ends with the event's closing brace). */
function withSummary(line: string | Buffer, summary: DeliverySummary): string | Buffer {
  const field = `,"deliverySummary":${JSON.stringify(summary)}}`;
  if (typeof line === 'string') return line.slice(0, line.lastIndexOf('}')) + field;
  return Buffer.concat([line.subarray(0, line.lastIndexOf(0x7d)), Buffer.from(field)]);
}

/**
 * A string field of an event's line: read from the line's head where the
 * event has it (JSON.stringify writes id and eventKey first), else from the
 * whole line parsed.
 */
function fieldOf(line: string | Buffer, field: 'id' | 'eventKey'): string {
  const head = typeof line === 'string' ? line.slice(0, HEAD_BYTES) : line.subarray(0, HEAD_BYTES).toString('utf8');
  const match = HEAD_FIELDS.exec(head);
  if (match) return field === 'id' ? match[1]! : JSON.parse(`"${match[2]!}"`) as string;
  return (JSON.parse(String(line)) as PlatformEvent)[field];
}

/** `{"id":"…","eventKey":"…",`: ids are UUIDs; a key's characters may be escaped. */
const HEAD_FIELDS = /^\{"id":"([0-9a-f-]{36})","eventKey":"((?:[^"\\]|\\.)*)",/;

function emptySegment(dir: string, name: string): Segment {
  return { sequence: Number(SEGMENT_NAME.exec(name)![1]), file: join(dir, name), count: 0, staged: 0, workspaces: new Map(), sealed: false, indexed: false };
}

/** `"tenantId":"…",` right after the id and key (see HEAD_FIELDS). */
const TENANT_FIELD = /^"tenantId":"((?:[^"\\]|\\.)*)",/;
const OCCURRED_AT = Buffer.from('"occurredAt":"');
/** How far from a line's end its occurredAt is looked for: only short fields (sourceId) follow it. */
const TAIL_BYTES = 1024;

/**
 * An event's indexed fields, read from its line without parsing its payload:
 * JSON.stringify writes id, eventKey and tenantId first and occurredAt after
 * the payload, and `"occurredAt":"` cannot occur unescaped inside a string,
 * so its last occurrence is the field. A line in any other shape is parsed.
 */
function headOf(line: Buffer): EventHead {
  const head = HEAD_FIELDS.exec(line.subarray(0, HEAD_BYTES).toString('utf8'));
  const tenant = head ? TENANT_FIELD.exec(line.toString('utf8', head[0].length, head[0].length + HEAD_BYTES)) : null;
  const at = line.lastIndexOf(OCCURRED_AT);
  if (head && tenant && at >= 0 && at >= line.length - TAIL_BYTES) {
    const start = at + OCCURRED_AT.length;
    const end = line.indexOf(0x22, start);
    return {
      id: head[1]!,
      eventKey: JSON.parse(`"${head[2]!}"`) as string,
      tenantId: JSON.parse(`"${tenant[1]!}"`) as string,
      occurredAt: line.toString('utf8', start, end),
    };
  }
  const { id, eventKey, tenantId, occurredAt } = JSON.parse(line.toString('utf8')) as PlatformEvent;
  return { id, eventKey, tenantId, occurredAt };
}

function indexInto(segment: Segment, event: EventHead, span: LineSpan, swap: Swap): void {
  segment.count += 1;
  let lines = segment.workspaces.get(event.tenantId);
  if (!lines) segment.workspaces.set(event.tenantId, (lines = new WorkspaceLines(swap)));
  lines.push(event, span);
}
