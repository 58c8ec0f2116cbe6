import { readSync } from 'node:fs';

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

/** Values a block holds: 512 KiB of Float64. */
const BLOCK_SIZE = 1 << 16;

/**
 * A growable column of numbers in typed arrays, a few bytes a value. Its first
 * block doubles up to BLOCK_SIZE values, then whole blocks are added: growing
 * never copies nor frees a large array (the allocator would keep the freed
 * ones resident).
 */
export class Column {
  private blocks: Values[];

  constructor(private readonly kind: new (size: number) => Values) {
    this.blocks = [new kind(0)];
  }

  get(index: number): number {
    return this.blocks[index >>> 16]![index & (BLOCK_SIZE - 1)]!;
  }

  set(index: number, value: number): void {
    this.blocks[index >>> 16]![index & (BLOCK_SIZE - 1)] = value;
  }

  /** Makes room for `length` values. */
  reserve(length: number): void {
    const last = this.blocks.length - 1;
    const lastBlock = this.blocks[last]!;
    if (length <= last * BLOCK_SIZE + lastBlock.length) return;
    // Only the last block may be short: the first while it doubles, or one that `trim` cut.
    if (lastBlock.length < BLOCK_SIZE) {
      const size = last === 0 ? Math.min(BLOCK_SIZE, Math.max(length, lastBlock.length * 2, 8)) : BLOCK_SIZE;
      const grown = new this.kind(size);
      grown.set(lastBlock);
      this.blocks[last] = grown;
    }
    while (this.blocks.length * BLOCK_SIZE < length) this.blocks.push(new this.kind(BLOCK_SIZE));
  }

  /** Gives up the room past `length` values (a column that grows no more, or shrank). */
  trim(length: number): void {
    this.blocks.length = Math.min(this.blocks.length, Math.max(1, Math.ceil(length / BLOCK_SIZE)));
    const last = this.blocks.length - 1;
    const kept = length - last * BLOCK_SIZE;
    if (this.blocks[last]!.length > kept) this.blocks[last] = this.blocks[last]!.slice(0, kept);
  }
}

/** The `length` bytes at `offset` of an open file, as text (one whole line, without its newline). */
export function readSpan(fd: number, offset: number, length: number): string {
  return readBytes(fd, offset, length).toString('utf8');
}

/** The `length` bytes at `offset` of an open file, at the start of a buffer of `capacity` bytes. */
export function readBytes(fd: number, offset: number, length: number, capacity = length): Buffer {
  const buffer = Buffer.allocUnsafe(capacity);
  for (let read = 0; read < length; ) {
    const bytes = readSync(fd, buffer, read, length - read, offset + read);
    if (bytes === 0) throw new Error(`the file ends before the line at byte ${offset}`);
    read += bytes;
  }
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
const REMOVED = -1;
/**
 * Grown beyond this share of slots in use (removed ones included), to this
 * share: linear probing stays short (some 13 slots for a miss at the most),
 * and a table costs 1.25 to 1.8 slots an entry.
 */
const MAX_LOAD = 0.8;
const GROWN_LOAD = 0.55;

/**
 * An open-addressing hash table in typed arrays, from a 32-bit fingerprint to
 * a positive number (and, `withTags`, a 32-bit tag): 12 or 16 bytes a slot
 * where a Map would cost some 80 bytes an entry. Fingerprints may repeat: `find` yields every
 * slot of one, and the caller confirms on the record.
 */
export class FingerprintTable {
  private keys = new Uint32Array(0);
  private values = new Float64Array(0);
  private tags: Uint32Array | null = null;
  /** Second fingerprints, kept only while `withChecks` (a start, until it is reconciled). */
  private checks: Uint32Array | null = null;
  private used = 0;
  size = 0;

  withTags(): this {
    this.tags = new Uint32Array(this.keys.length);
    return this;
  }

  /** Keeps a second fingerprint a slot (4 bytes) until `dropChecks`. */
  withChecks(): this {
    this.checks = new Uint32Array(this.keys.length);
    return this;
  }

  dropChecks(): void {
    this.checks = null;
  }

  /** The slot's second fingerprint, or undefined once dropped. */
  check(slot: number): number | undefined {
    return this.checks?.[slot];
  }

  get capacity(): number {
    return this.keys.length;
  }

  /** `value` > 0. */
  add(key: number, value: number, tag = 0, check = 0): void {
    if (this.used + 1 > this.keys.length * MAX_LOAD) this.resize(Math.max(1024, Math.ceil((this.size + 1) / GROWN_LOAD)));
    const capacity = this.keys.length;
    let slot = key % capacity;
    while (this.values[slot]! > 0) slot = slot + 1 === capacity ? 0 : slot + 1;
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
      if (this.keys[slot] === key && this.values[slot]! > 0) yield slot;
    }
  }

  /** The slot holding `value` under `key`, or -1. */
  slotOf(key: number, value: number): number {
    for (const slot of this.find(key)) if (this.values[slot] === value) return slot;
    return -1;
  }

  value(slot: number): number {
    return this.values[slot]!;
  }

  tag(slot: number): number {
    return this.tags?.[slot] ?? 0;
  }

  remove(slot: number): void {
    this.values[slot] = REMOVED;
    this.size -= 1;
  }

  /** Every slot in use; removing the slot visited meanwhile is allowed. */
  *slots(): Generator<number> {
    for (let slot = 0; slot < this.keys.length; slot += 1) if (this.values[slot]! > 0) yield slot;
  }

  /** Removes every entry `drop` accepts. */
  removeWhere(drop: (value: number, tag: number) => boolean): void {
    for (const slot of this.slots()) if (drop(this.values[slot]!, this.tag(slot))) this.remove(slot);
  }

  clear(): void {
    this.keys = new Uint32Array(0);
    this.values = new Float64Array(0);
    if (this.tags) this.tags = new Uint32Array(0);
    if (this.checks) this.checks = new Uint32Array(0);
    this.used = 0;
    this.size = 0;
  }

  /** `capacity` slots; removed ones are dropped. */
  private resize(capacity: number): void {
    const [keys, values, tags, checks] = [this.keys, this.values, this.tags, this.checks];
    this.keys = new Uint32Array(capacity);
    this.values = new Float64Array(capacity);
    if (tags) this.tags = new Uint32Array(capacity);
    if (checks) this.checks = new Uint32Array(capacity);
    this.used = 0;
    this.size = 0;
    for (let slot = 0; slot < keys.length; slot += 1) if (values[slot]! > 0) this.add(keys[slot]!, values[slot]!, tags?.[slot], checks?.[slot]);
  }
}
