import { setTimeout as sleep } from 'node:timers/promises';
import { describeFault } from '../../errors.js';
import { KEPT_BYTES, KEPT_ITEMS, activityItem, type ActivityItem, type ActivityLog, type ActivityType, type NewActivity } from '../../events/activity.js';
import type { ChangeFeed } from './change-feed.js';
import type { Database } from './database.js';

const TOPIC = 'activity';
/** Other daemons are woken at most this often: a commit that notifies serialises every commit of the cluster. */
const NOTIFY_INTERVAL_MS = 50;
/**
 * A daemon's writes start at most this often: under load, one commit per
 * interval carries everything that came meanwhile, rather than commits back
 * to back competing with publishes for the WAL flush. Streams batch their
 * writes as often (FLUSH_MS in routes/streams.ts).
 */
const WRITE_INTERVAL_MS = 20;
/** Read anyway this often, should a notification be lost. */
const POLL_MS = 2_000;
/** One read of other daemons' items takes at most this many, and past the first, this many bytes. */
const READ_ITEMS = 500;
const READ_BYTES = 4 * 1024 * 1024;
/**
 * Items waiting for their write, in bytes: beyond, new ones are dropped (and
 * counted in the log) rather than held while the database does not answer.
 */
const UNWRITTEN_BYTES = KEPT_BYTES;
/** Own rows from this id on are in memory; before a failed write's answer is known, none are trusted to be. */
const NONE_IN_MEMORY = Number.MAX_SAFE_INTEGER;

interface ActivityRow {
  id: string;
  type: ActivityType;
  workspace_id: string;
  event_key: string;
  /** Null for this daemon's own items, which it has in memory. */
  data: string | null;
}

/**
 * The activity log on PostgreSQL (see decisions: "Live streams on
 * PostgreSQL"): every daemon's items in one table with global ids, kept to
 * the latest KEPT_ITEMS. Appends are written in groups (the ones that arrived
 * while the previous write ran, or in the 20 ms since it started), each one
 * statement. Other daemons are woken
 * by one NOTIFY after the commit, at most one per 50 ms, and read what is new
 * in batches; items reach the follower in id order, this daemon's own from
 * memory as soon as every item before them has.
 */
export class PostgresActivityLog implements ActivityLog {
  private unwritten: NewActivity[] = [];
  private unwrittenBytes = 0;
  /** Appends dropped since the last report. */
  private dropped = 0;
  private writing: Promise<void> | null = null;
  private lastWriteAt = 0;
  /** Items lost to failed writes since the first failure (null: the last write succeeded); reported once failing, once working again. */
  private lostToFailedWrites: number | null = null;
  /** The highest id handed to the follower. */
  private cursor = 0;
  private onItems: ((items: ActivityItem[]) => void) | null = null;
  /** This daemon's written items, by id, until handed on (ids increase with insertion). */
  private readonly own = new Map<number, ActivityItem>();
  private ownInMemoryFrom = 0;
  private reading: Promise<void> | null = null;
  private readAgain = false;
  /** A read stopped at an own item whose write's answer had not come back. */
  private waitingForOwn = false;
  private readFailing = false;
  private readonly waiters: Array<{ id: number; resolve: () => void }> = [];
  private poll: NodeJS.Timeout | null = null;
  private lastNotify = 0;
  private notifyTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
    private readonly logError: (message: string) => void,
  ) {
    // null: the feed reconnected and may have missed notifications.
    feed.subscribe(TOPIC, () => void this.read());
  }

  async follow(onItems: (items: ActivityItem[]) => void): Promise<ActivityItem[]> {
    // The sequence first: anything written after it has higher ids, and is read next.
    const { rows: sequence } = await this.database.query<{ last_id: string }>('SELECT last_id FROM activity_sequence');
    const { rows } = await this.database.query<ActivityRow>(
      `SELECT id, type, workspace_id, event_key, data
       FROM (SELECT id, type, workspace_id, event_key, data, size, sum(size) OVER (ORDER BY id DESC) AS newer_bytes FROM activity) latest
       WHERE newer_bytes - size < $1 ORDER BY id DESC LIMIT $2`,
      [KEPT_BYTES, KEPT_ITEMS],
    );
    const kept = rows.reverse().map(itemOf);
    this.cursor = kept.length > 0 ? kept[kept.length - 1]!.id : Number(sequence[0]?.last_id ?? 0);
    this.forgetOwnUpToCursor();
    this.onItems = onItems;
    this.poll = setInterval(() => void this.read(), POLL_MS);
    this.poll.unref();
    // What was written between these reads and this daemon's LISTEN.
    void this.read();
    return kept;
  }

  append(entry: NewActivity): void {
    if (this.closed) return;
    if (this.unwrittenBytes + entry.json.length > UNWRITTEN_BYTES) {
      this.dropped += 1;
      return;
    }
    this.unwritten.push(entry);
    this.unwrittenBytes += entry.json.length;
    this.writing ??= this.writeGroups();
  }

  async caughtUp(): Promise<void> {
    const { rows } = await this.database.query<{ last_id: string }>('SELECT last_id FROM activity_sequence');
    const issued = Number(rows[0]?.last_id ?? 0);
    if (this.cursor >= issued) return;
    const reached = new Promise<void>((resolve) => this.waiters.push({ id: issued, resolve }));
    void this.read();
    return reached;
  }

  /** Writes what is still unwritten, then stops reading. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.poll) clearInterval(this.poll);
    await this.writing;
    if (this.notifyTimer) {
      clearTimeout(this.notifyTimer);
      this.notifyTimer = null;
      await this.notifyPeers();
    }
    await this.reading;
    this.onItems = null;
  }

  // Writing

  private async writeGroups(): Promise<void> {
    while (this.unwritten.length > 0) {
      const wait = this.lastWriteAt + WRITE_INTERVAL_MS - Date.now();
      if (wait > 0) await sleep(wait);
      this.lastWriteAt = Date.now();
      // At most KEPT_ITEMS: then no row a write adds is among those it trims (see write).
      const group = this.unwritten.splice(0, KEPT_ITEMS);
      for (const entry of group) this.unwrittenBytes -= entry.json.length;
      if (this.dropped > 0) {
        this.logError(`live streams missed ${this.dropped} activity items: more were waiting to be written than the daemon holds`);
        this.dropped = 0;
      }
      let lastId: number;
      try {
        lastId = await this.write(group);
      } catch (error) {
        // It may have committed all the same: own items are read back until the next write's answer.
        this.ownInMemoryFrom = NONE_IN_MEMORY;
        if (this.lostToFailedWrites === null) this.logError(`live streams miss activity items that cannot be written: ${describeFault(error)}`);
        this.lostToFailedWrites = (this.lostToFailedWrites ?? 0) + group.length;
        this.readOnAfterOwn(false);
        continue;
      }
      if (this.lostToFailedWrites !== null) {
        this.logError(`activity items are written again; live streams missed ${this.lostToFailedWrites} of them`);
        this.lostToFailedWrites = null;
      }
      const firstId = lastId - group.length + 1;
      if (this.ownInMemoryFrom === NONE_IN_MEMORY) this.ownInMemoryFrom = firstId;
      group.forEach((entry, index) => this.own.set(firstId + index, activityItem(firstId + index, entry)));
      this.wakePeers();
      if (firstId === this.cursor + 1) this.handOnOwn();
      // Items of other daemons come before these: they are read first.
      this.readOnAfterOwn(firstId > this.cursor);
    }
    this.writing = null;
  }

  private readOnAfterOwn(otherItemsFirst: boolean): void {
    if (!otherItemsFirst && !this.waitingForOwn) return;
    this.waitingForOwn = false;
    void this.read();
  }

  /**
   * One statement: ids from the sequence row (locked until the commit, so
   * ids become visible in order on every daemon), the rows, and the trim.
   * Ids are given out without gaps, so the rows this write pushes out of
   * the latest KEPT_ITEMS are exactly the $2 ids ending KEPT_ITEMS below its
   * last: the trim deletes that range alone. (`id <= bound` alone walked
   * every row deleted before and not yet vacuumed, in the index and the
   * table: 4.6 ms a write under load, the largest statement the bench saw.)
   */
  private async write(group: NewActivity[]): Promise<number> {
    const { rows } = await this.database.query<{ last_id: string }>(
      `WITH issued AS (
         INSERT INTO activity_sequence AS s (last_id) VALUES ((extract(epoch FROM clock_timestamp()) * 1000000)::bigint + $2)
         ON CONFLICT (only_row) DO UPDATE SET last_id = s.last_id + $2
         RETURNING last_id
       ), added AS (
         INSERT INTO activity (id, origin, type, workspace_id, event_key, size, data)
         SELECT issued.last_id - $2 + item.n, $3, item.type, item.workspace_id, item.event_key, item.size, item.data
         FROM issued, json_to_recordset($1::json) AS item(n integer, type text, workspace_id text, event_key text, size integer, data text)
       ), trimmed AS (
         DELETE FROM activity WHERE id <= (SELECT last_id FROM issued) - $4 AND id > (SELECT last_id FROM issued) - $2 - $4
       )
       SELECT last_id FROM issued`,
      [
        JSON.stringify(
          group.map((entry, index) => ({
            n: index + 1,
            type: entry.type,
            workspace_id: entry.workspaceId,
            event_key: entry.eventKey,
            size: entry.json.length,
            data: entry.json,
          })),
        ),
        group.length,
        this.database.instanceId,
        KEPT_ITEMS,
      ],
    );
    return Number(rows[0]!.last_id);
  }

  /** Hands on this daemon's items that come next. */
  private handOnOwn(): void {
    const items: ActivityItem[] = [];
    for (let item = this.own.get(this.cursor + 1); item; item = this.own.get(this.cursor + 1)) {
      this.own.delete(item.id);
      this.cursor = item.id;
      items.push(item);
    }
    this.handOn(items);
  }

  /** Wakes the other daemons, outside the write's commit, at most once per NOTIFY_INTERVAL_MS. */
  private wakePeers(): void {
    if (this.notifyTimer) return;
    const wait = this.lastNotify + NOTIFY_INTERVAL_MS - Date.now();
    if (wait <= 0) void this.notifyPeers();
    else {
      this.notifyTimer = setTimeout(() => {
        this.notifyTimer = null;
        void this.notifyPeers();
      }, wait);
      this.notifyTimer.unref();
    }
  }

  private async notifyPeers(): Promise<void> {
    this.lastNotify = Date.now();
    await this.feed.notify(this.database, TOPIC, 'new').catch((error: unknown) => this.logError(`could not wake other daemons' live streams: ${describeFault(error)}`));
  }

  // Reading

  /** One read at a time; a call while one runs makes it go round once more. */
  private read(): Promise<void> {
    if (!this.onItems || this.closed) return Promise.resolve();
    if (this.reading) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        let more: boolean | 'waiting for own' = true;
        while (more === true && !this.closed) {
          this.readAgain = false;
          more = (await this.readBatch()) || this.readAgain;
        }
        this.readFailing = false;
      } catch (error) {
        if (!this.readFailing) this.logError(`live streams could not read other daemons' activity (trying again every ${POLL_MS / 1000} s): ${describeFault(error)}`);
        this.readFailing = true;
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }

  /** True when there may be more to read at once; 'waiting for own' when the rest waits for a write's answer. */
  private async readBatch(): Promise<boolean | 'waiting for own'> {
    const { rows } = await this.database.query<ActivityRow>(
      `SELECT id, type, workspace_id, event_key, CASE WHEN origin = $2 AND id >= $3 THEN NULL ELSE data END AS data
       FROM (SELECT id, origin, type, workspace_id, event_key, size, data, sum(size) OVER (ORDER BY id) AS through FROM activity WHERE id > $1) newer
       WHERE through - size < $4 ORDER BY id LIMIT $5`,
      [this.cursor, this.database.instanceId, this.ownInMemoryFrom, READ_BYTES, READ_ITEMS],
    );
    let more: boolean | 'waiting for own' = rows.length === READ_ITEMS;
    const items: ActivityItem[] = [];
    let missed = 0;
    for (const row of rows) {
      const id = Number(row.id);
      // Handed on from memory while this read ran.
      if (id <= this.cursor) continue;
      this.takeOwnBefore(id, items);
      const item = row.data === null ? this.own.get(id) : itemOf(row);
      if (!item) {
        if (this.writing) {
          // Committed, and the write's answer is on its way: it hands these on, then reads on.
          this.waitingForOwn = true;
          more = 'waiting for own';
        } else {
          // No answer is coming (the write failed after its commit): read them back.
          this.ownInMemoryFrom = NONE_IN_MEMORY;
          more = true;
        }
        break;
      }
      // Ids have no gaps: one skipped here was trimmed before this daemon read it (more than KEPT_ITEMS came in between).
      if (this.cursor > 0 && id > this.cursor + 1) missed += id - this.cursor - 1;
      this.cursor = id;
      items.push(item);
    }
    if (missed > 0) this.logError(`live streams on this daemon missed ${missed} activity items: newer ones replaced them before they were read`);
    this.forgetOwnUpToCursor();
    this.handOn(items);
    return more;
  }

  /**
   * This daemon's items below `id` the cursor has not reached: a later write
   * trimmed them before this read came to them (a burst of more than
   * KEPT_ITEMS while the cursor was not yet known to precede them). They are
   * in memory, and nothing before them can be read any more: they go next.
   */
  private takeOwnBefore(id: number, items: ActivityItem[]): void {
    for (const [ownId, item] of this.own) {
      if (ownId >= id) return;
      this.own.delete(ownId);
      if (ownId <= this.cursor) continue;
      this.cursor = ownId;
      items.push(item);
    }
  }

  private handOn(items: ActivityItem[]): void {
    if (items.length > 0) this.onItems?.(items);
    for (let index = this.waiters.length - 1; index >= 0; index -= 1) {
      const waiter = this.waiters[index]!;
      if (waiter.id > this.cursor) continue;
      this.waiters.splice(index, 1);
      waiter.resolve();
    }
  }

  /** Own items the cursor passed without them (written before the follower started, or trimmed before read). */
  private forgetOwnUpToCursor(): void {
    for (const id of this.own.keys()) {
      if (id > this.cursor) break;
      this.own.delete(id);
    }
  }
}

function itemOf(row: ActivityRow): ActivityItem {
  return activityItem(Number(row.id), { type: row.type, workspaceId: row.workspace_id, eventKey: row.event_key, json: row.data! });
}
