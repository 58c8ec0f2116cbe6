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
  const buffer = Buffer.allocUnsafe(length);
  for (let read = 0; read < length; ) {
    const bytes = readSync(fd, buffer, read, length - read, offset + read);
    if (bytes === 0) throw new Error(`the file ends before the line at byte ${offset}`);
    read += bytes;
  }
  return buffer.toString('utf8');
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
