import { createReadStream } from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { PlatformEvent } from '../../handlers/sdk.js';
import { AppendLog, replay } from '../store/append-log.js';
import { ensurePrivateDir, fsyncDir, isMissing, writeFileDurably } from '../store/files.js';
import { RecentEvents, type RecentLimits } from './recent.js';

export interface RetentionPolicy {
  maxAgeMs: number;
  maxPerWorkspace: number;
}

interface SegmentInfo {
  file: string;
  count: number;
  /** Per workspace: how many events, and the oldest occurredAt (ms). */
  workspaces: Map<string, { count: number; oldest: number }>;
}

export interface EventLogOptions {
  /** A segment is sealed and a new one started after this many events. */
  segmentMaxEvents: number;
  /** What is kept in memory for listing; the listing reads older events from disk when bytes ran out. */
  recent: RecentLimits;
}

const SEGMENT_NAME = /^segment-(\d{6,})\.log$/;
const segmentName = (sequence: number) => `segment-${String(sequence).padStart(6, '0')}.log`;

/**
 * The event log: append-only JSON lines in numbered segment files under
 * <data-dir>/events. An append costs one line in the newest segment, whatever
 * the size of the log. Retention deletes whole expired segments and compacts
 * sealed ones that are partly expired; it never touches the segment being
 * written. Recent events per workspace are kept in memory for reads, within
 * a byte budget (see recent.ts).
 */
export class EventLog {
  private rolling: Promise<void> | null = null;
  /** Appends handed to the active segment and not yet on disk: they count towards its size. */
  private appendsPending = 0;

  private constructor(
    private readonly dir: string,
    private readonly options: EventLogOptions,
    private readonly segments: SegmentInfo[],
    private active: AppendLog<PlatformEvent>,
    private readonly recentEvents: RecentEvents,
  ) {}

  static async open(dir: string, options: EventLogOptions): Promise<EventLog> {
    await ensurePrivateDir(dir);
    const files = (await readdir(dir)).filter((name) => SEGMENT_NAME.test(name)).sort();
    if (files.length === 0) files.push(segmentName(1));
    const recent = new RecentEvents(options.recent);
    const remember = (event: PlatformEvent) => recent.push(event);
    const segments: SegmentInfo[] = [];
    let active: AppendLog<PlatformEvent> | undefined;
    for (const [index, name] of files.entries()) {
      const info = emptySegment(join(dir, name));
      const onRecord = (event: PlatformEvent) => {
        countInto(info, event);
        remember(event);
      };
      if (index === files.length - 1) active = await AppendLog.open(info.file, onRecord);
      else await replay(info.file, onRecord);
      segments.push(info);
    }
    return new EventLog(dir, options, segments, active!, recent);
  }

  /** Resolves once the event is on disk; only then is it counted and listed (a failed write leaves no trace). */
  async append(event: PlatformEvent): Promise<void> {
    if (this.rolling) await this.rolling;
    const segment = this.segments.at(-1)!;
    this.appendsPending += 1;
    try {
      const written = this.active.append(event);
      if (segment.count + this.appendsPending >= this.options.segmentMaxEvents && !this.rolling) {
        this.rolling = this.roll().finally(() => (this.rolling = null));
      }
      await written;
    } finally {
      this.appendsPending -= 1;
    }
    countInto(segment, event);
    this.recentEvents.push(event);
  }

  /**
   * A page of every retained event of the workspace, newest first in the order
   * of the log (segment, then line), after `before` when paging on. That order
   * never changes (retention only removes lines) and new events come before
   * every existing one, so paging from the first page to the last neither skips
   * nor repeats an event. Reads segments newest first until the page is full.
   */
  async page(
    workspaceId: string,
    query: EventPageQuery,
    policy: RetentionPolicy,
    now: number,
  ): Promise<{ items: PlatformEvent[]; more: boolean; last?: EventPosition }> {
    const cutoff = Math.max(now - policy.maxAgeMs, query.since ?? Number.NEGATIVE_INFINITY);
    const until = query.until ?? Number.POSITIVE_INFINITY;
    const marker = `"tenantId":${JSON.stringify(workspaceId)}`;
    const items: PlatformEvent[] = [];
    let last: EventPosition | undefined;
    for (const segment of [...this.segments].reverse()) {
      if (items.length > query.limit) break;
      const sequence = segmentSequence(this.dir, segment.file);
      if (!segment.workspaces.has(workspaceId) || (query.before && sequence > query.before.segment)) continue;
      let found: PlatformEvent[] = [];
      let cursorLine = -1;
      try {
        for await (const line of createInterface({ input: createReadStream(segment.file), crlfDelay: Infinity })) {
          if (!line.includes(marker)) continue;
          let event: PlatformEvent;
          try {
            event = JSON.parse(line) as PlatformEvent;
          } catch {
            continue; // the active segment may end in a line still being written
          }
          if (query.before?.segment === sequence && event.id === query.before.id) cursorLine = found.length;
          found.push(event);
        }
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
      if (query.before?.segment === sequence) {
        // The cursor's own event is gone only if retention removed it: then keep what is older than it.
        const before = query.before;
        found = cursorLine >= 0 ? found.slice(0, cursorLine) : found.filter((event) => Date.parse(event.occurredAt) < before.at);
      }
      for (let index = found.length - 1; index >= 0 && items.length <= query.limit; index -= 1) {
        const event = found[index]!;
        const at = Date.parse(event.occurredAt);
        if (event.tenantId !== workspaceId || at < cutoff || at > until) continue;
        if (query.eventKey !== undefined && event.eventKey !== query.eventKey) continue;
        if (items.length < query.limit) last = { segment: sequence, at, id: event.id };
        items.push(event);
      }
    }
    const more = items.length > query.limit;
    return { items: items.slice(0, query.limit), more, ...(more && last ? { last } : {}) };
  }

  /** One event of the workspace, from memory or else from disk (newest segment first); undefined if not retained. */
  async find(workspaceId: string, eventId: string): Promise<PlatformEvent | undefined> {
    for (const event of this.recentEvents.newestFirst(workspaceId)) if (event.id === eventId) return event;
    const marker = `"id":${JSON.stringify(eventId)},`;
    for (const segment of [...this.segments].reverse()) {
      if (!segment.workspaces.has(workspaceId)) continue;
      try {
        for await (const line of createInterface({ input: createReadStream(segment.file), crlfDelay: Infinity })) {
          if (!line.includes(marker)) continue;
          try {
            const event = JSON.parse(line) as PlatformEvent;
            if (event.id === eventId && event.tenantId === workspaceId) return event;
          } catch {
            continue;
          }
        }
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
    return undefined;
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
   */
  async applyRetention(policy: RetentionPolicy, now: number): Promise<{ removedEvents: number; removedIds: Set<string> }> {
    const cutoff = now - policy.maxAgeMs;
    const newerKept = new Map<string, number>();
    const removedIds = new Set<string>();
    let removedEvents = 0;
    for (let index = this.segments.length - 1; index >= 0; index -= 1) {
      const segment = this.segments[index]!;
      const isActive = index === this.segments.length - 1;
      const expiresSome = [...segment.workspaces].some(([workspaceId, stats]) => {
        const newer = newerKept.get(workspaceId) ?? 0;
        return newer + stats.count > policy.maxPerWorkspace || stats.oldest < cutoff;
      });
      if (isActive || !expiresSome) {
        for (const [workspaceId, stats] of segment.workspaces) {
          newerKept.set(workspaceId, (newerKept.get(workspaceId) ?? 0) + stats.count);
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
    }
    this.segments.splice(0, this.segments.length, ...this.segments.filter((segment) => segment.count > 0));
    return { removedEvents, removedIds };
  }

  async close(): Promise<void> {
    if (this.rolling) await this.rolling;
    await this.active.close();
  }

  private async roll(): Promise<void> {
    const last = this.segments.at(-1)!;
    const sequence = Number(SEGMENT_NAME.exec(last.file.slice(this.dir.length + 1))![1]) + 1;
    const next = emptySegment(join(this.dir, segmentName(sequence)));
    const sealed = this.active;
    this.active = await AppendLog.open(next.file, () => undefined);
    this.segments.push(next);
    await sealed.close();
  }

  /**
   * Rewrites a sealed segment with the events `keep` accepts (visited newest
   * first), deleting it when none remain. Returns how many were dropped.
   */
  private async compact(index: number, keep: (event: PlatformEvent) => boolean): Promise<number> {
    const segment = this.segments[index]!;
    const events: PlatformEvent[] = [];
    await replay<PlatformEvent>(segment.file, (event) => events.push(event));
    const kept: PlatformEvent[] = [];
    for (let i = events.length - 1; i >= 0; i -= 1) if (keep(events[i]!)) kept.push(events[i]!);
    kept.reverse();
    const rebuilt = emptySegment(segment.file);
    for (const event of kept) countInto(rebuilt, event);
    if (kept.length === 0) {
      await unlink(segment.file);
      await fsyncDir(this.dir);
    } else if (kept.length < events.length) {
      await writeFileDurably(segment.file, kept.map((event) => JSON.stringify(event)).join('\n') + '\n');
    }
    this.segments[index] = rebuilt;
    return events.length - kept.length;
  }
}

export interface EventPageQuery {
  eventKey?: string | undefined;
  /** Epoch ms, inclusive. */
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  /** The last event of the previous page: its segment, occurredAt (ms) and id. */
  before?: EventPosition | undefined;
}

export interface EventPosition {
  segment: number;
  at: number;
  id: string;
}

const segmentSequence = (dir: string, file: string) => Number(SEGMENT_NAME.exec(file.slice(dir.length + 1))![1]);

function emptySegment(file: string): SegmentInfo {
  return { file, count: 0, workspaces: new Map() };
}

function countInto(segment: SegmentInfo, event: PlatformEvent): void {
  segment.count += 1;
  const occurred = Date.parse(event.occurredAt);
  const stats = segment.workspaces.get(event.tenantId);
  if (stats) {
    stats.count += 1;
    stats.oldest = Math.min(stats.oldest, occurred);
  } else {
    segment.workspaces.set(event.tenantId, { count: 1, oldest: occurred });
  }
}
