/**
 * A page of a listing bounded in bytes (PLATFORM_MAX_PAGE_BYTES): items are
 * serialised as they are added, the page stops before the item that would
 * take it over the limit, and it always holds at least one item, however
 * large. The JSON made here is what the answer sends (no second pass).
 */
export class PageBudget<T> {
  private readonly parts: string[] = [];
  private used = 0;
  private refused = false;
  /** See startChunk. */
  private chunkFrom = 0;
  private chunkEnd = Number.POSITIVE_INFINITY;

  constructor(
    readonly maxBytes: number,
    /** The item as the answer shows it. */
    private readonly toJson: (item: T) => string = JSON.stringify,
  ) {}

  /** Adds the item when it fits, or when the page is still empty; false: the page is full and the item left out. */
  admit(item: T): boolean {
    const json = this.toJson(item);
    // A comma separates it from the item before.
    const size = Buffer.byteLength(json) + (this.parts.length > 0 ? 1 : 0);
    if (this.parts.length > 0 && this.used + size > this.maxBytes) {
      this.refused = true;
      return false;
    }
    this.parts.push(json);
    this.used += size;
    return true;
  }

  /** An item was left out for want of room: the page is complete. */
  get full(): boolean {
    return this.refused;
  }

  /**
   * For a store that reads synchronously: it reads about `bytes` (at least one
   * item), then `hasRoom` says stop, and it goes on after the event loop has
   * had its turn, in a chunk of its own.
   */
  startChunk(bytes: number): void {
    this.chunkFrom = this.parts.length;
    this.chunkEnd = this.used + bytes;
  }

  /** False once this chunk has taken its bytes: read no further now (the page itself may not be full). */
  hasRoom(): boolean {
    return this.parts.length === this.chunkFrom || this.used < this.chunkEnd;
  }

  get count(): number {
    return this.parts.length;
  }

  /** Bytes of the items and the commas between them. */
  get bytes(): number {
    return this.used;
  }

  /** Puts the admitted items in the opposite order (a listing read newest first and shown oldest first). */
  reverse(): void {
    this.parts.reverse();
  }

  /** The admitted items' JSON, in order. */
  get json(): readonly string[] {
    return this.parts;
  }

  /** How many more items of the size seen so far would fit (at least 1), to size the next read. */
  roomFor(): number {
    if (this.parts.length === 0) return 1;
    return Math.max(1, Math.floor((this.maxBytes - this.used) / (this.used / this.parts.length)));
  }
}

/** The first read of a page from a database: a few rows, since each may be as large as an event payload. */
const FIRST_BATCH = 8;

/**
 * Fills a page from a store read in batches (a database), so that a page of
 * large items never holds more than about its budget in memory: `read` gives
 * up to `count` rows after `after` (the last row of the batch before, or
 * undefined for the first batch), in the listing's order. The next batch is
 * sized by what the budget still holds room for; `itemOf` is a row's item. Answers the last row on the
 * page and whether more rows follow.
 */
export async function fillInBatches<R, T>(
  limit: number,
  budget: PageBudget<T>,
  read: (after: R | undefined, count: number) => Promise<R[]>,
  itemOf: (row: R) => T,
): Promise<{ items: T[]; last: R | undefined; more: boolean }> {
  const items: T[] = [];
  let last: R | undefined;
  let batch = FIRST_BATCH;
  for (;;) {
    // One row beyond the limit tells whether more follow.
    const wanted = Math.min(batch, limit - budget.count + 1);
    const rows = await read(last, wanted);
    for (const row of rows) {
      const item = itemOf(row);
      if (budget.count === limit || !budget.admit(item)) return { items, last, more: true };
      items.push(item);
      last = row;
    }
    if (rows.length < wanted) return { items, last, more: false };
    batch = budget.roomFor() + 1;
  }
}

/** A budget for callers that read a page without sending it (tools, tests): no byte limit. */
export const unbounded = <T>(): PageBudget<T> => new PageBudget<T>(Number.POSITIVE_INFINITY);
