import type { PlatformEvent } from '../../../handlers/sdk.js';

/** How much the in-memory buffer of recent events may hold. */
export interface RecentLimits {
  /** Events per workspace. */
  perWorkspace: number;
  /** Bytes of event JSON per workspace. */
  bytesPerWorkspace: number;
  /** Bytes of event JSON across all workspaces. */
  bytesTotal: number;
}

interface Entry {
  event: PlatformEvent;
  bytes: number;
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
  newest(rank: number): PlatformEvent | undefined {
    return rank < this.length ? this.entries[this.entries.length - 1 - rank]!.event : undefined;
  }

  /** Returns the bytes freed. */
  forget(ids: ReadonlySet<string>): number {
    const before = this.bytes;
    this.entries = this.entries.slice(this.head).filter((entry) => !ids.has(entry.event.id));
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

  /** Bytes of event JSON held now; never above limits.bytesTotal once a push returns. */
  get bytes(): number {
    return this.totalBytes;
  }

  push(event: PlatformEvent): void {
    let events = this.byWorkspace.get(event.tenantId);
    if (!events) {
      events = new WorkspaceEvents();
      this.byWorkspace.set(event.tenantId, events);
    }
    const bytes = Buffer.byteLength(JSON.stringify(event));
    events.push({ event, bytes });
    this.totalBytes += bytes;
    while (events.length > 0 && (events.length > this.limits.perWorkspace || events.bytes > this.limits.bytesPerWorkspace)) {
      this.totalBytes -= events.dropOldest();
    }
    while (this.totalBytes > this.limits.bytesTotal) this.totalBytes -= this.largest().dropOldest();
  }

  /** The workspace's event `rank` places from its newest (0), if memory holds it. */
  newest(workspaceId: string, rank: number): PlatformEvent | undefined {
    return this.byWorkspace.get(workspaceId)?.newest(rank);
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
