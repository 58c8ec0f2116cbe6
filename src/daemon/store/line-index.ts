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

type Column = Float64Array | Uint32Array | Uint8Array;

/** `column` with room for at least `length` values, doubled when it must grow (amortised O(1) a push). */
export function withRoom<C extends Column>(column: C, length: number): C {
  if (length <= column.length) return column;
  const grown = new (column.constructor as new (size: number) => C)(Math.max(length, column.length * 2, 8));
  grown.set(column);
  return grown;
}

/** `column` cut to its first `length` values, for an index that will not grow any more. */
export function trimmed<C extends Column>(column: C, length: number): C {
  return length === column.length ? column : (column.slice(0, length) as C);
}

/** The `length` bytes at `offset` of an open file, as text (one whole line of JSON, without its newline). */
export function readSpan(fd: number, offset: number, length: number): string {
  const buffer = Buffer.allocUnsafe(length);
  for (let read = 0; read < length; ) {
    const bytes = readSync(fd, buffer, read, length - read, offset + read);
    if (bytes === 0) throw new Error(`the file ends before the line at byte ${offset}`);
    read += bytes;
  }
  return buffer.toString('utf8');
}
