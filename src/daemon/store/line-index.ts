import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Building blocks of in-memory indexes over append-only files of JSON lines:
 * a few bytes a record in typed arrays instead of the record as an object.
 */

/** FNV-1a over UTF-16 code units: an index's 32-bit fingerprint of an id or key, confirmed against the record itself. */
export function hash32(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

type Values = Float64Array | Uint32Array | Uint8Array;
type ValuesKind = typeof Float64Array | typeof Uint32Array | typeof Uint8Array;

/** Values a block holds: 512 KiB of Float64. */
export const BLOCK_SIZE = 1 << 16;
const BLOCK_MASK = BLOCK_SIZE - 1;

/**
 * The pages of spilled columns a store's swap keeps in memory: a listing's
 * scan over a few columns, and the top of a binary search, stay cached.
 */
export const SWAP_CACHE_BYTES = 4 * 1024 * 1024;

/** What the swap reads back at once: a page of a spilled block. */
const PAGE_BYTES = 16 * 1024;

/**
 * Where columns put the blocks memory need not hold: an unlinked file in the
 * data directory (so it is gone with the process, and never in a backup),
 * read back a page at a time through a cache bounded in bytes. It holds
 * nothing that is not derived from the logs: every start rebuilds it.
 */
export class Swap {
  private readonly fd: number;
  private end = 0;
  /**
   * Released regions by size class, for reuse: a region takes the power of
   * two at or above its length (4 KiB at least), so that the file stays
   * within twice what it holds while sealed segments of every size come and
   * go.
   */
  private readonly released = new Map<number, number[]>();
  /** Cached pages by their offset in the file, least recently used first. */
  private readonly pages = new Map<number, { values: Values; owner: Column; slot: number }>();
  /**
   * The cache's memory, taken once: a cached page is a view of one of its
   * slots. Pages allocated one by one and freed as they leave the cache
   * left the allocator's heap holding tens of megabytes it never gave back.
   */
  private readonly slab: ArrayBuffer;
  private readonly freeSlots: number[];

  constructor(dir: string, cacheBytes: number) {
    const file = join(dir, `.swap-${process.pid}-${randomUUID()}`);
    this.fd = openSync(file, 'w+', 0o600);
    unlinkSync(file);
    const slots = Math.max(1, Math.floor(cacheBytes / PAGE_BYTES));
    this.slab = new ArrayBuffer(slots * PAGE_BYTES);
    this.freeSlots = Array.from({ length: slots }, (_, slot) => slots - 1 - slot);
  }

  /** Stores `values`; answers where. */
  store(values: Values): number {
    const size = sizeClassOf(values.byteLength);
    const offset = this.released.get(size)?.pop() ?? ((this.end += size), this.end - size);
    writeAt(this.fd, new Uint8Array(values.buffer, values.byteOffset, values.byteLength), offset);
    return offset;
  }

  /** The region stored `length` bytes is free again; its pages leave the cache. */
  release(offset: number, length: number): void {
    for (let page = offset; page < offset + length; page += PAGE_BYTES) this.forget(page);
    const size = sizeClassOf(length);
    const free = this.released.get(size) ?? [];
    this.released.set(size, free);
    free.push(offset);
  }

  /** Bytes the file spans (held or free for reuse). */
  get fileBytes(): number {
    return this.end;
  }

  /** The page at `offset` (of a region `kind` stored), `length` values long, from the cache or the file. */
  page(offset: number, kind: ValuesKind, length: number, owner: Column): Values {
    const cached = this.pages.get(offset);
    if (cached) {
      // Most recently used: to the end of the map's order.
      this.pages.delete(offset);
      this.pages.set(offset, cached);
      cached.owner = owner;
      return cached.values;
    }
    if (this.freeSlots.length === 0) this.forget(this.pages.keys().next().value!);
    const slot = this.freeSlots.pop()!;
    const values = new kind(this.slab, slot * PAGE_BYTES, length);
    readAt(this.fd, new Uint8Array(this.slab, slot * PAGE_BYTES, values.byteLength), offset);
    this.pages.set(offset, { values, owner, slot });
    return values;
  }

  /** Reads a stored region, or its first `into.length` bytes. */
  read(offset: number, into: Values): void {
    readAt(this.fd, new Uint8Array(into.buffer, into.byteOffset, into.byteLength), offset);
  }

  /** Overwrites bytes of a stored region (its cached page, if any, is the caller's to change). */
  write(offset: number, values: Values): void {
    writeAt(this.fd, new Uint8Array(values.buffer, values.byteOffset, values.byteLength), offset);
  }

  /** The page at `offset` if the cache holds it. */
  cached(offset: number): Values | undefined {
    return this.pages.get(offset)?.values;
  }

  close(): void {
    closeSync(this.fd);
    this.pages.clear();
  }

  private forget(offset: number): void {
    const cached = this.pages.get(offset);
    if (!cached) return;
    this.pages.delete(offset);
    this.freeSlots.push(cached.slot);
    cached.owner.dropPage(offset);
  }
}

/**
 * A growable column of numbers in typed arrays, a few bytes a value. Its first
 * block doubles up to BLOCK_SIZE values, then whole blocks are added: growing
 * never copies nor frees a large array (the allocator would keep the freed
 * ones resident). With a swap, every block but the last goes to the swap once
 * full (and every block once `spill` is called): memory then holds one block
 * a column, whatever its length, and a value read or written in a spilled
 * block costs a cached page or a read or write of the file.
 */
export class Column {
  private blocks: Array<Values | null>;
  /** Where each spilled block is in the swap, and its length (the blocks memory holds have neither). */
  private spilledAt: number[] = [];
  private spilledLengths: number[] = [];
  private readonly pageValues: number;
  /** The page last read: scans read a page's values one after another. */
  private pageOffset = -1;
  private pageRead: Values | null = null;

  constructor(
    readonly kind: ValuesKind,
    private readonly swap: Swap | null = null,
  ) {
    this.blocks = [new kind(0)];
    this.pageValues = PAGE_BYTES / kind.BYTES_PER_ELEMENT;
  }

  get(index: number): number {
    const block = this.blocks[index >>> 16];
    if (block) return block[index & BLOCK_MASK]!;
    return this.spilledPage(index)[(index & BLOCK_MASK) % this.pageValues]!;
  }

  set(index: number, value: number): void {
    const block = this.blocks[index >>> 16];
    if (block) {
      block[index & BLOCK_MASK] = value;
      return;
    }
    const within = index & BLOCK_MASK;
    const one = new this.kind(1);
    one[0] = value;
    this.swap!.write(this.spilledAt[index >>> 16]! + within * this.kind.BYTES_PER_ELEMENT, one);
    const page = this.swap!.cached(this.pageOffsetOf(index));
    if (page) page[within % this.pageValues] = value;
  }

  /** Makes room for `length` values. */
  reserve(length: number): void {
    const last = this.blocks.length - 1;
    const lastBlock = this.blocks[last];
    if (!lastBlock) {
      if (length <= last * BLOCK_SIZE + this.spilledLengths[last]!) return;
      throw new Error('a column spilled whole grows no more');
    }
    if (length <= last * BLOCK_SIZE + lastBlock.length) return;
    // Only the last block may be short: the first while it doubles, or one that `trim` cut.
    if (lastBlock.length < BLOCK_SIZE) {
      const size = last === 0 ? Math.min(BLOCK_SIZE, Math.max(length, lastBlock.length * 2, 8)) : BLOCK_SIZE;
      const grown = new this.kind(size);
      grown.set(lastBlock);
      this.blocks[last] = grown;
    }
    while (this.blocks.length * BLOCK_SIZE < length) {
      // A block written to the swap is the next one's memory: a column that grows allocates one block, not one each.
      const spilled = this.swap ? this.spillBlock(this.blocks.length - 1) : null;
      this.blocks.push(spilled?.length === BLOCK_SIZE ? spilled.fill(0) : new this.kind(BLOCK_SIZE));
    }
  }

  /** The first `length` values, as one array (read from the swap where spilled). */
  copyOut(length: number): Values {
    const out = new this.kind(length);
    for (let start = 0; start < length; start += BLOCK_SIZE) {
      const end = Math.min(length, start + BLOCK_SIZE);
      const block = this.blocks[start >>> 16];
      if (block) out.set(block.subarray(0, end - start), start);
      else this.swap!.read(this.spilledAt[start >>> 16]!, out.subarray(start, end));
    }
    return out;
  }

  /** Fills an empty column with `values`, block by block (full ones go to the swap as they would growing). */
  assign(values: Values): void {
    for (let start = 0; start < values.length; start += BLOCK_SIZE) {
      const end = Math.min(values.length, start + BLOCK_SIZE);
      this.reserve(end);
      this.blocks[start >>> 16]!.set(values.subarray(start, end));
    }
  }

  /** Every block to the swap (a column that grows no more: a sealed segment's). */
  spill(): void {
    if (this.swap) for (let block = 0; block < this.blocks.length; block += 1) this.spillBlock(block);
  }

  /** Gives up the room past `length` values (a column that grows no more, or shrank). */
  trim(length: number): void {
    const blocks = Math.max(1, Math.ceil(length / BLOCK_SIZE));
    for (let block = blocks; block < this.blocks.length; block += 1) this.releaseBlock(block);
    this.blocks.length = Math.min(this.blocks.length, blocks);
    const last = this.blocks.length - 1;
    const kept = length - last * BLOCK_SIZE;
    const lastBlock = this.blocks[last];
    if (lastBlock && lastBlock.length > kept) this.blocks[last] = lastBlock.slice(0, kept);
  }

  /**
   * Keeps the values among the first `length` that `keep` marks (1), in their
   * order: the column is built anew, a pass over the old one, whose swap
   * space is then released.
   */
  retain(keep: Uint8Array, length: number): void {
    const old = new Column(this.kind, this.swap);
    [old.blocks, old.spilledAt, old.spilledLengths] = [this.blocks, this.spilledAt, this.spilledLengths];
    this.blocks = [new this.kind(0)];
    this.spilledAt = [];
    this.spilledLengths = [];
    this.dropPage(this.pageOffset);
    let kept = 0;
    for (let index = 0; index < length; index += 1) {
      if (!keep[index]) continue;
      this.reserve(kept + 1);
      this.set(kept, old.get(index));
      kept += 1;
    }
    old.release();
    this.trim(kept);
  }

  /** Gives back the column's swap space: it is empty again. */
  release(): void {
    for (let block = 0; block < this.blocks.length; block += 1) this.releaseBlock(block);
    this.blocks = [new this.kind(0)];
    this.spilledAt = [];
    this.spilledLengths = [];
  }

  /** The swap evicted (or freed) the page at `offset`. */
  dropPage(offset: number): void {
    if (offset !== this.pageOffset) return;
    this.pageOffset = -1;
    this.pageRead = null;
  }

  private pageOffsetOf(index: number): number {
    return this.spilledAt[index >>> 16]! + Math.floor((index & BLOCK_MASK) / this.pageValues) * PAGE_BYTES;
  }

  private spilledPage(index: number): Values {
    const offset = this.pageOffsetOf(index);
    if (offset !== this.pageOffset || !this.pageRead) {
      const pageStart = Math.floor((index & BLOCK_MASK) / this.pageValues) * this.pageValues;
      const length = Math.min(this.pageValues, this.spilledLengths[index >>> 16]! - pageStart);
      this.pageRead = this.swap!.page(offset, this.kind, length, this);
      this.pageOffset = offset;
    }
    return this.pageRead;
  }

  /** Returns the block's values, now in the swap (null if there were none to spill). */
  private spillBlock(block: number): Values | null {
    const values = this.blocks[block];
    if (!values || values.length === 0) return null;
    this.spilledAt[block] = this.swap!.store(values);
    this.spilledLengths[block] = values.length;
    this.blocks[block] = null;
    return values;
  }

  private releaseBlock(block: number): void {
    if (this.blocks[block] || this.spilledAt[block] === undefined) return;
    this.swap!.release(this.spilledAt[block]!, this.spilledLengths[block]! * this.kind.BYTES_PER_ELEMENT);
    delete this.spilledAt[block];
  }
}

const sizeClassOf = (length: number) => Math.max(4096, 2 ** Math.ceil(Math.log2(length)));

function writeAt(fd: number, bytes: Uint8Array, offset: number): void {
  for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written, bytes.length - written, offset + written);
}

function readAt(fd: number, into: Uint8Array, offset: number): void {
  for (let read = 0; read < into.length; ) {
    const bytes = readSync(fd, into, read, into.length - read, offset + read);
    if (bytes === 0) throw new Error(`the file ends before byte ${offset + into.length}`);
    read += bytes;
  }
}

/** The `length` bytes at `offset` of an open file, as text (one whole line, without its newline). */
export function readSpan(fd: number, offset: number, length: number): string {
  return readBytes(fd, offset, length).toString('utf8');
}

/** The `length` bytes at `offset` of an open file, at the start of a buffer of `capacity` bytes. */
export function readBytes(fd: number, offset: number, length: number, capacity = length): Buffer {
  const buffer = Buffer.allocUnsafe(capacity);
  readAt(fd, buffer.subarray(0, length), offset);
  return buffer;
}

/** What readLineAt reads first: most lines (a record with its attempts) fit. */
const FIRST_READ = 4096;

/** The line starting at `offset` of an open file, without its newline, when its length is not known. */
export function readLineAt(fd: number, offset: number): string {
  let buffer = Buffer.allocUnsafe(FIRST_READ);
  let filled = 0;
  for (;;) {
    const bytes = readSync(fd, buffer, filled, buffer.length - filled, offset + filled);
    if (bytes === 0) throw new Error(`the file ends before the end of the line at byte ${offset}`);
    const end = buffer.subarray(0, filled + bytes).indexOf(0x0a, filled);
    filled += bytes;
    if (end !== -1) return buffer.toString('utf8', 0, end);
    if (filled === buffer.length) {
      const larger = Buffer.allocUnsafe(buffer.length * 2);
      buffer.copy(larger);
      buffer = larger;
    }
  }
}

/** FNV-1a with another offset basis: a second fingerprint, independent enough of hash32 to make a 64-bit pair. */
export function hash32b(text: string): number {
  let hash = 0x050c5d1f;
  for (let index = text.length - 1; index >= 0; index -= 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

const EMPTY = 0;
/**
 * Grown beyond this share of slots in use (removed ones included), to this
 * share: linear probing stays short (some 13 slots for a miss at the most),
 * and a table costs 1.25 to 1.8 slots an entry.
 */
const MAX_LOAD = 0.8;
const GROWN_LOAD = 0.55;
/** A removed slot's value: the largest the values' array holds (a value is below it). */
const REMOVED_NARROW = 0xffff_ffff;
const REMOVED_WIDE = Number.MAX_SAFE_INTEGER;

/**
 * An open-addressing hash table in typed arrays, from a 32-bit fingerprint to
 * a positive number (and, `withTags`, a tag): 8 bytes a slot, 10 with tags,
 * where a Map would cost some 80 bytes an entry. Values are 32-bit and tags
 * 16-bit until one does not fit: the table then widens them (64-bit floats,
 * 32-bit tags) for good. Fingerprints may repeat: `find` yields every slot of
 * one, and the caller confirms on the record.
 */
export class FingerprintTable {
  private keys = new Uint32Array(0);
  private values: Uint32Array | Float64Array = new Uint32Array(0);
  private removed = REMOVED_NARROW;
  private tags: Uint16Array | Uint32Array | null = null;
  /** Second fingerprints, kept `withChecks`. */
  private checks: Uint32Array | null = null;
  private used = 0;
  size = 0;

  withTags(): this {
    this.tags = new Uint16Array(this.keys.length);
    return this;
  }

  /** Keeps a second fingerprint a slot (4 bytes). */
  withChecks(): this {
    this.checks = new Uint32Array(this.keys.length);
    return this;
  }

  /** The slot's second fingerprint (undefined without `withChecks`). */
  check(slot: number): number | undefined {
    return this.checks?.[slot];
  }

  /** Room for `entries` in all without growing (a table filled at once). */
  reserve(entries: number): void {
    if (entries > this.keys.length * MAX_LOAD) this.resize(Math.ceil(entries / GROWN_LOAD));
  }

  get capacity(): number {
    return this.keys.length;
  }

  /** `value` > 0, a whole number below 2^53 - 1. */
  add(key: number, value: number, tag = 0, check = 0): void {
    if (value >= this.removed && this.values instanceof Uint32Array) this.widenValues();
    if (tag > 0xffff && this.tags instanceof Uint16Array) this.tags = Uint32Array.from(this.tags);
    if (this.used + 1 > this.keys.length * MAX_LOAD) this.resize(Math.max(1024, Math.ceil((this.size + 1) / GROWN_LOAD)));
    const capacity = this.keys.length;
    let slot = key % capacity;
    while (this.inUse(slot)) slot = slot + 1 === capacity ? 0 : slot + 1;
    if (this.values[slot] === EMPTY) this.used += 1;
    this.keys[slot] = key;
    this.values[slot] = value;
    if (this.tags) this.tags[slot] = tag;
    if (this.checks) this.checks[slot] = check;
    this.size += 1;
  }

  /** The slots of `key`, in use. */
  *find(key: number): Generator<number> {
    const capacity = this.keys.length;
    if (capacity === 0) return;
    for (let slot = key % capacity; this.values[slot] !== EMPTY; slot = slot + 1 === capacity ? 0 : slot + 1) {
      if (this.keys[slot] === key && this.values[slot] !== this.removed) yield slot;
    }
  }

  /** The slot holding `value` under `key`, or -1. */
  slotOf(key: number, value: number): number {
    for (const slot of this.find(key)) if (this.values[slot] === value) return slot;
    return -1;
  }

  key(slot: number): number {
    return this.keys[slot]!;
  }

  value(slot: number): number {
    return this.values[slot]!;
  }

  tag(slot: number): number {
    return this.tags?.[slot] ?? 0;
  }

  remove(slot: number): void {
    this.values[slot] = this.removed;
    this.size -= 1;
  }

  /** Every slot in use; removing the slot visited meanwhile is allowed. */
  *slots(): Generator<number> {
    for (let slot = 0; slot < this.keys.length; slot += 1) if (this.inUse(slot)) yield slot;
  }

  /** Removes every entry `drop` accepts. */
  removeWhere(drop: (value: number, tag: number) => boolean): void {
    for (const slot of this.slots()) if (drop(this.values[slot]!, this.tag(slot))) this.remove(slot);
  }

  clear(): void {
    this.keys = new Uint32Array(0);
    this.values = this.values instanceof Uint32Array ? new Uint32Array(0) : new Float64Array(0);
    if (this.tags) this.tags = this.tags instanceof Uint16Array ? new Uint16Array(0) : new Uint32Array(0);
    if (this.checks) this.checks = new Uint32Array(0);
    this.used = 0;
    this.size = 0;
  }

  private inUse(slot: number): boolean {
    const value = this.values[slot]!;
    return value !== EMPTY && value !== this.removed;
  }

  private widenValues(): void {
    const wide = new Float64Array(this.values.length);
    for (let slot = 0; slot < wide.length; slot += 1) wide[slot] = this.values[slot] === REMOVED_NARROW ? REMOVED_WIDE : this.values[slot]!;
    this.values = wide;
    this.removed = REMOVED_WIDE;
  }

  /** `capacity` slots; removed ones are dropped. */
  private resize(capacity: number): void {
    const [keys, values, tags, checks, removed] = [this.keys, this.values, this.tags, this.checks, this.removed];
    this.keys = new Uint32Array(capacity);
    this.values = values instanceof Uint32Array ? new Uint32Array(capacity) : new Float64Array(capacity);
    if (tags) this.tags = tags instanceof Uint16Array ? new Uint16Array(capacity) : new Uint32Array(capacity);
    if (checks) this.checks = new Uint32Array(capacity);
    this.used = 0;
    this.size = 0;
    for (let slot = 0; slot < keys.length; slot += 1) {
      if (values[slot] !== EMPTY && values[slot] !== removed) this.add(keys[slot]!, values[slot]!, tags?.[slot], checks?.[slot]);
    }
  }
}
