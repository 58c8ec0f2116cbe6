import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { isMissing } from '../files.js';
import type { Column } from './line-index.js';

/**
 * A file that lets a start skip reading a journal: a JSON header line, then
 * typed columns back to back, in the machine's byte order. The header carries
 * a digest of the columns, which catches a file cut short or garbled; what
 * the index must match (the size of the file it indexes, …) is the caller's
 * to check. A missing or unreadable index is never an error: the caller reads
 * its journal as it would without one.
 */

export type IndexColumn = Float64Array | Uint32Array | Uint8Array;

/** The index kept beside a file (`segment-000001.log`, `outbox.log`): `.idx` for `.log`. */
export const indexFileOf = (file: string) => file.replace(/\.log$/, '.idx');
type IndexColumnKind<T extends IndexColumn> = new (length: number) => T;

const bytesOf = (columns: readonly IndexColumn[]) => columns.map((column) => new Uint8Array(column.buffer, column.byteOffset, column.byteLength));

/** Writes the header (with the columns' digest added) and the columns to a temporary file, then renames it over `file`. */
export function writeIndexFile(file: string, header: object, columns: readonly IndexColumn[]): void {
  const bytes = bytesOf(columns);
  const digest = createHash('sha256');
  for (const column of bytes) digest.update(column);
  const temp = `${file}.tmp`;
  try {
    writeFileSync(temp, Buffer.concat([Buffer.from(`${JSON.stringify({ ...header, digest: digest.digest('hex') })}\n`), ...bytes]), { mode: 0o600 });
    renameSync(temp, file);
  } catch (error) {
    removeIndexFile(temp);
    throw error;
  }
}

/** What `writeIndexFileInTurns` digests or writes in one turn of the event loop. */
const TURN_BYTES = 4 * 1024 * 1024;

/**
 * `writeIndexFile` for a daemon that serves meanwhile: the digest is taken
 * and the file written a few megabytes a turn. The rename happens only if
 * `stillValid()` then (what the index describes may have been rewritten
 * meanwhile); answers whether it did.
 */
export async function writeIndexFileInTurns(file: string, header: object, columns: readonly IndexColumn[], stillValid: () => boolean): Promise<boolean> {
  const chunks = bytesOf(columns).flatMap((column) => {
    const parts: Uint8Array[] = [];
    for (let at = 0; at < column.length; at += TURN_BYTES) parts.push(column.subarray(at, at + TURN_BYTES));
    return parts;
  });
  const digest = createHash('sha256');
  for (const chunk of chunks) {
    digest.update(chunk);
    await nextTurn();
  }
  const temp = `${file}.tmp`;
  let renamed = false;
  try {
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.write(`${JSON.stringify({ ...header, digest: digest.digest('hex') })}\n`);
      for (const chunk of chunks) await handle.write(chunk);
    } finally {
      await handle.close();
    }
    if (!stillValid()) return false;
    renameSync(temp, file);
    renamed = true;
    return true;
  } finally {
    if (!renamed) removeIndexFile(temp);
  }
}

/** An index read back: its header, and its columns taken one after another. */
export interface IndexReader<H> {
  header: H;
  /** Bytes of columns after the header. */
  bodyBytes: number;
  take<T extends IndexColumn>(kind: IndexColumnKind<T>, length: number): T;
}

/**
 * The index in `file`, or null when there is none, its header is not JSON or
 * its columns do not match their digest. `expectedBodyBytes` (from the header)
 * is checked before the digest is computed.
 */
export function readIndexFile<H extends object>(file: string, expectedBodyBytes: (header: H) => number): IndexReader<H> | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
  const newline = bytes.indexOf(0x0a);
  let header: H & { digest?: unknown };
  try {
    header = JSON.parse(bytes.toString('utf8', 0, newline)) as H & { digest?: unknown };
  } catch {
    return null;
  }
  const body = bytes.subarray(newline + 1);
  let expected: number;
  try {
    expected = expectedBodyBytes(header);
  } catch {
    return null;
  }
  if (newline < 0 || body.length !== expected) return null;
  if (createHash('sha256').update(body).digest('hex') !== header.digest) return null;
  let at = 0;
  return {
    header,
    bodyBytes: body.length,
    take(kind, length) {
      const values = new kind(length);
      new Uint8Array(values.buffer).set(body.subarray(at, at + values.byteLength));
      at += values.byteLength;
      return values;
    },
  };
}

/** Removes an index (what it indexes is deleted or about to change). */
export function removeIndexFile(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}

/**
 * What the index of an append-only journal names of it: the bytes it covers
 * (the journal's size then), and a digest of the last JOURNAL_TAIL_BYTES of
 * them. Each line there names its own record, so another journal (written to
 * and compacted since, restored from elsewhere) differs in them.
 */
export interface JournalMark {
  journalBytes: number;
  journalTail: string;
}

const JOURNAL_TAIL_BYTES = 64 * 1024;

function tailDigest(journal: string, size: number): string {
  const length = Math.min(size, JOURNAL_TAIL_BYTES);
  const bytes = Buffer.alloc(length);
  const fd = openSync(journal, 'r');
  try {
    for (let read = 0; read < length; ) {
      const got = readSync(fd, bytes, read, length - read, size - length + read);
      if (got === 0) break;
      read += got;
    }
  } finally {
    closeSync(fd);
  }
  return createHash('sha256').update(bytes).digest('hex');
}

/** The mark of the journal's first `bytes` (whole lines, never rewritten in place). */
export function journalMarkAt(journal: string, bytes: number): JournalMark {
  return { journalBytes: bytes, journalTail: tailDigest(journal, bytes) };
}

/**
 * A checkpoint of an append-only journal: an index of its first
 * `journalBytes`, answered when the journal still begins with them (it may
 * have grown since: its reader replays what follows). The file stays while it
 * holds, and goes when it does not: a journal rewritten since (compacted,
 * restored from elsewhere), an index cut short or garbled.
 */
export function readJournalCheckpoint<H extends JournalMark>(journal: string, expectedBodyBytes: (header: H) => number): IndexReader<H> | null {
  const file = indexFileOf(journal);
  const index = readIndexFile<H>(file, expectedBodyBytes);
  let holds = false;
  try {
    holds = index !== null && statSync(journal).size >= index.header.journalBytes && tailDigest(journal, index.header.journalBytes) === index.header.journalTail;
  } catch {
    holds = false;
  }
  if (holds) return index;
  removeIndexFile(file);
  return null;
}

/**
 * When an append-only journal's checkpoint is written (see
 * readJournalCheckpoint): each time the journal has grown `everyBytes` since
 * the last one, in a turn of its own, one at a time, none once stopped. The
 * journal's owner writes it (`write`, which takes what it saves before its
 * first await) and says when the journal is rewritten: a checkpoint then
 * goes, and one being written out is not renamed into place (`current`).
 */
export class CheckpointSchedule {
  private coveredBytes = 0;
  private writing: Promise<void> | null = null;
  private rewrites = 0;
  private stopped = false;

  constructor(
    private readonly journal: () => { file: string; byteSize: number },
    private readonly everyBytes: number,
    private readonly write: () => Promise<void>,
    private readonly reportError: (error: unknown) => void,
  ) {}

  /** A checkpoint read at the start covers the journal's first `bytes`. */
  restored(bytes: number): void {
    this.coveredBytes = bytes;
  }

  /** A checkpoint if the journal has grown enough since the last one, and the owner can take one now (`ready`). */
  due(ready = true): void {
    const { byteSize } = this.journal();
    if (!ready || this.stopped || this.writing || byteSize - this.coveredBytes < this.everyBytes) return;
    this.coveredBytes = byteSize;
    this.writing = nextTurn()
      .then(() => this.write())
      .catch(this.reportError)
      .finally(() => {
        this.writing = null;
        // What was written meanwhile may be due already.
        this.due();
      });
  }

  /** The journal is about to be rewritten (every line moves): its checkpoint goes, and the next comes once it has grown again. */
  rewriting(): void {
    this.rewrites += 1;
    this.coveredBytes = 0;
    removeIndexFile(indexFileOf(this.journal().file));
  }

  /** For a checkpoint being taken: whether no rewrite has come since (see `rewriting`). */
  current(): () => boolean {
    const rewrites = this.rewrites;
    return () => this.rewrites === rewrites;
  }

  /** No more checkpoints on their own; resolves once one being written is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.writing;
  }
}

/** Bytes a row takes across these columns in an index. */
export const rowBytes = (columns: readonly Column[]) => columns.reduce((sum, column) => sum + column.kind.BYTES_PER_ELEMENT, 0);

/** Fills empty columns, in order, with `length` values each from the index (as `columnValues` gave them). */
export function restoreColumns(take: IndexReader<unknown>['take'], columns: readonly Column[], length: number): void {
  for (const column of columns) column.assign(take(column.kind as IndexColumnKind<IndexColumn>, length));
}

/** The first `length` values of each column, for an index (read back by `restoreColumns`). */
export const columnValues = (columns: readonly Column[], length: number): IndexColumn[] => columns.map((column) => column.copyOut(length) as IndexColumn);
