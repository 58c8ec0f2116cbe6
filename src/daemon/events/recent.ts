import type { PlatformEvent } from '../../handlers/sdk.js';

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
  /** Whether any event of this workspace was dropped from memory (the disk still has it). */
  dropped = false;

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
    this.dropped = true;
    return entry.bytes;
  }

  *newestFirst(): Generator<PlatformEvent> {
    for (let index = this.entries.length - 1; index >= this.head; index -= 1) yield this.entries[index]!.event;
  }

  get oldest(): PlatformEvent | undefined {
    return this.entries[this.head]?.event;
  }
}

/**
 * The newest events of each workspace, kept in memory for listing, bounded by
 * count and by bytes: per workspace, and in total. Over the total, the
 * workspace holding the most bytes gives up its oldest events, so that one
 * busy workspace cannot push the others out. What is dropped stays on disk.
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

  /** Newest first. */
  newestFirst(workspaceId: string): Iterable<PlatformEvent> {
    return this.byWorkspace.get(workspaceId)?.newestFirst() ?? [];
  }

  /**
   * When memory holds fewer than `perWorkspace` events of the workspace because
   * bytes ran out: how many it holds and the oldest of them. The listing then
   * reads older ones from disk. Null when memory holds all it would by count.
   */
  shortOf(workspaceId: string): { held: number; oldest: PlatformEvent | undefined } | null {
    const events = this.byWorkspace.get(workspaceId);
    if (!events?.dropped || events.length >= this.limits.perWorkspace) return null;
    return { held: events.length, oldest: events.oldest };
  }

  private largest(): WorkspaceEvents {
    let largest: WorkspaceEvents | undefined;
    for (const events of this.byWorkspace.values()) if (!largest || events.bytes > largest.bytes) largest = events;
    return largest!;
  }
}
