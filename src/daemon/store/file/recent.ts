import type { PlatformEvent } from '../../../handlers/sdk.js';

/** How much the in-memory buffer of recent events may hold. */
export interface RecentLimits {
  /** Events per workspace. */
  perWorkspace: number;
  /** Bytes of memory per workspace (see costOf). */
  bytesPerWorkspace: number;
  /** Bytes of memory across all workspaces. */
  bytesTotal: number;
}

/**
 * An event as its JSON text, parsed when it is read: a parsed event costs
 * several times its JSON (every string and object its own heap object), the
 * text what costOf counts.
 */
interface Entry {
  id: string;
  json: string;
  bytes: number;
}

/** The entry object, its id and the string headers, on a 64-bit heap. */
const ENTRY_OVERHEAD = 96;

/**
 * What an entry costs the heap: V8 keeps a string of Latin-1 characters at
 * a byte a character, any other at two.
 */
function costOf(id: string, json: string): number {
  const wide = /[^\u0000-\u00ff]/.test(json);
  return ENTRY_OVERHEAD + id.length + json.length * (wide ? 2 : 1);
}

/** One workspace's recent events, oldest first; dropping the oldest is O(1) amortised. */
class WorkspaceEvents {
  private entries: Entry[] = [];
  private head = 0;
  bytes = 0;

  get length(): number {
    return this.entries.length - this.head;
  }

  push(entry: Entry): void {
    this.entries.push(entry);
    this.bytes += entry.bytes;
  }

  /** Returns the bytes freed. */
  dropOldest(): number {
    const entry = this.entries[this.head]!;
    this.entries[this.head] = undefined as unknown as Entry;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    this.bytes -= entry.bytes;
    return entry.bytes;
  }

  /** rank 0 is the newest. */
  newest(rank: number): Entry | undefined {
    return rank < this.length ? this.entries[this.entries.length - 1 - rank] : undefined;
  }

  /** Returns the bytes freed. */
  forget(ids: ReadonlySet<string>): number {
    const before = this.bytes;
    this.entries = this.entries.slice(this.head).filter((entry) => !ids.has(entry.id));
    this.head = 0;
    this.bytes = this.entries.reduce((sum, entry) => sum + entry.bytes, 0);
    return before - this.bytes;
  }
}

/**
 * The newest events of each workspace, kept in memory for listing, bounded by
 * count and by bytes: per workspace, and in total. Over the total, the
 * workspace holding the most bytes gives up its oldest events, so that one
 * busy workspace cannot push the others out. What is dropped stays on disk.
 *
 * Each workspace's events here are always the newest ones of the log, in the
 * log's order, without a gap: the event log finds an event here by its rank
 * from the newest (see EventLog.page).
 */
export class RecentEvents {
  private readonly byWorkspace = new Map<string, WorkspaceEvents>();
  private totalBytes = 0;

  constructor(private readonly limits: RecentLimits) {}

  /** Bytes of memory held now (see costOf); never above limits.bytesTotal once a push returns. */
  get bytes(): number {
    return this.totalBytes;
  }

  /** `json` is the event's JSON text when the caller has it (a line of the log). */
  push(event: PlatformEvent, json = JSON.stringify(event)): void {
    let events = this.byWorkspace.get(event.tenantId);
    if (!events) {
      events = new WorkspaceEvents();
      this.byWorkspace.set(event.tenantId, events);
    }
    const bytes = costOf(event.id, json);
    events.push({ id: event.id, json, bytes });
    this.totalBytes += bytes;
    while (events.length > 0 && (events.length > this.limits.perWorkspace || events.bytes > this.limits.bytesPerWorkspace)) {
      this.totalBytes -= events.dropOldest();
    }
    while (this.totalBytes > this.limits.bytesTotal) this.totalBytes -= this.largest().dropOldest();
  }

  /** The JSON of the workspace's event `rank` places from its newest (0), if memory holds it and its id is `is` (else undefined). */
  newest(workspaceId: string, rank: number, is: (id: string) => boolean): string | undefined {
    const entry = this.byWorkspace.get(workspaceId)?.newest(rank);
    return entry && is(entry.id) ? entry.json : undefined;
  }

  /** Retention removed these events from the log: memory lets them go too, keeping its events the log's newest. */
  forget(workspaceIds: Iterable<string>, eventIds: ReadonlySet<string>): void {
    for (const workspaceId of workspaceIds) {
      const events = this.byWorkspace.get(workspaceId);
      if (events) this.totalBytes -= events.forget(eventIds);
    }
  }

  private largest(): WorkspaceEvents {
    let largest: WorkspaceEvents | undefined;
    for (const events of this.byWorkspace.values()) if (!largest || events.bytes > largest.bytes) largest = events;
    return largest!;
  }
}
