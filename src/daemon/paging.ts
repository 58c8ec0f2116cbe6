/**
 * A page of a listing bounded in bytes (PLATFORM_MAX_PAGE_BYTES): items are
 * serialised as they are added, the page stops before the item that would
 * take it over the limit, and it always holds at least one item, however
 * large. The JSON made here is what the answer sends (no second pass).
 */
/** Items read as bytes from this size on are sent as they are (one write each), smaller ones joined as text. */
const SENT_AS_BYTES = 16 * 1024;

export class PageBudget<T> {
  private readonly parts: Array<string | Buffer> = [];
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
    return this.admitJson(this.toJson(item));
  }

  /**
   * `admit` for an item its store holds as the JSON the answer shows (a line
   * of a log, read as bytes): no parse and no second serialisation, and a
   * large one never becomes a string on the heap.
   */
  admitJson(json: string | Buffer): boolean {
    // A comma separates it from the item before.
    const size = (typeof json === 'string' ? Buffer.byteLength(json) : json.length) + (this.parts.length > 0 ? 1 : 0);
    if (this.parts.length > 0 && this.used + size > this.maxBytes) {
      this.refused = true;
      return false;
    }
    // A small one becomes text, to be joined with its neighbours into one write.
    this.parts.push(typeof json !== 'string' && json.length < SENT_AS_BYTES ? json.toString('utf8') : json);
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
  get json(): ReadonlyArray<string | Buffer> {
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
 * Batches at most double, up to this many rows: a batch is sized by the rows
 * seen so far, and a few small rows must not make the next batch hundreds of
 * large ones.
 */
const MOST_BATCH = 64;
/** A batch of rows of known sizes holds about this many bytes. */
const BATCH_BYTES = 1024 * 1024;

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
    batch = Math.min(budget.roomFor() + 1, 2 * batch, MOST_BATCH);
  }
}

/**
 * Fills a page from rows whose sizes the store can tell before it reads them
 * (the bytes of each row's JSON as sent, or more). `sizes` gives up to `count`
 * keys with their sizes after the key `after`, in the listing's order (asked
 * for in growing numbers: telling a size has a cost too); `fetch` reads the
 * rows of some keys, in their order (fewer when some are gone meanwhile). Rows
 * are fetched in batches of about BATCH_BYTES and never beyond what the budget
 * can take, so that a page of large rows reads only what it sends.
 */
export async function fillBySize<K, R, T>(
  limit: number,
  budget: PageBudget<T>,
  sizes: (after: K | undefined, count: number) => Promise<Array<{ key: K; bytes: number }>>,
  fetch: (keys: K[]) => Promise<R[]>,
  itemOf: (row: R) => T,
): Promise<{ items: T[]; last: R | undefined; more: boolean }> {
  const items: T[] = [];
  let last: R | undefined;
  let known: Array<{ key: K; bytes: number }> = [];
  let exhausted = false;
  let after: K | undefined;
  let asked = FIRST_BATCH;
  for (;;) {
    if (known.length === 0 && !exhausted) {
      // One row beyond the limit tells whether more follow.
      const count = Math.min(asked, limit + 1 - budget.count);
      known = await sizes(after, count);
      exhausted = known.length < count;
      after = known.at(-1)?.key ?? after;
      asked = Math.min(2 * asked, 1024);
    }
    if (known.length === 0) return { items, last, more: false };
    if (budget.count === limit) return { items, last, more: true };
    const keys: K[] = [];
    let batchBytes = 0;
    let pageBytes = budget.bytes;
    for (const { key, bytes } of known) {
      const size = bytes + 1;
      if (budget.count + keys.length === limit || (keys.length > 0 && batchBytes + size > BATCH_BYTES)) break;
      // The first item of a page is taken whatever its size.
      if (budget.count + keys.length > 0 && pageBytes + size > budget.maxBytes) break;
      keys.push(key);
      batchBytes += size;
      pageBytes += size;
    }
    if (keys.length === 0) return { items, last, more: true };
    known = known.slice(keys.length);
    for (const row of await fetch(keys)) {
      const item = itemOf(row);
      if (!budget.admit(item)) return { items, last, more: true };
      items.push(item);
      last = row;
    }
  }
}

/** A budget for callers that read a page without sending it (tools, tests): no byte limit. */
export const unbounded = <T>(): PageBudget<T> => new PageBudget<T>(Number.POSITIVE_INFINITY);

/** The items a budget admitted, parsed again: for callers that read a page without sending it (tools, tests). */
export const itemsOf = <T>(budget: PageBudget<T>): T[] => budget.json.map((json) => JSON.parse(String(json)) as T);
