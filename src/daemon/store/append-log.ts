import { closeSync, openSync } from 'node:fs';
import { open, rename, truncate, unlink, type FileHandle } from 'node:fs/promises';
import { StartupError } from '../errors.js';
import { FILE_MODE, asStorageError, fsyncDir, isMissing, writeFileDurably } from '../files.js';
import { readBytes, readLineAt, readSpan } from './line-index.js';
import { dirname } from 'node:path';

/** How long a lazily appended record may wait for a group to join before it is written alone. */
const LAZY_FLUSH_MS = 20;
/** What rewriteLines writes at once. */
const CHUNK_BYTES = 1024 * 1024;
/** What rewriteLines reads at once, into one of WINDOWS windows (2 MiB in all). */
const WINDOW_BYTES = 64 * 1024;
const WINDOWS = 32;

/** Where a record's line is in the file: its first byte and its length in bytes, without the newline. */
export interface LineSpan {
  offset: number;
  length: number;
}

/** The lines of a rewrite: lines of the current file by offset, except those given as text (by index). */
export interface LineSource {
  offsets: Float64Array;
  texts: ReadonlyMap<number, string>;
}

interface Waiter {
  /** null: a rewrite superseded the line before it was written (the record is wherever the rewrite put it). */
  resolve: (span: LineSpan | null) => void;
  reject: (error: unknown) => void;
}

/**
 * Lines on disk that are not live yet (a write spanning files: a publish's
 * event and its deliveries): `commit` makes them live, `retract` withdraws
 * them; exactly one of the two, once.
 */
export interface StagedWrite {
  commit(): void;
  retract(): Promise<void>;
}

/** A StagedWrite whose first settling calls `release` (the staged count goes down) and whose second throws. */
export function stagedWrite(what: string, release: () => void, commit: () => void, retract: () => Promise<void>): StagedWrite {
  let settled = false;
  const settle = () => {
    if (settled) throw new Error(`${what} settled twice`);
    settled = true;
    release();
  };
  return {
    commit: () => {
      settle();
      commit();
    },
    retract: () => {
      settle();
      return retract();
    },
  };
}

/**
 * An append-only file of JSON lines, for collections that grow without bound
 * (event log, outbox, audit trail). An append costs its own line, never a rewrite
 * of the file: appends made while a write is running are grouped into the next
 * one, which costs one write and one fdatasync for the whole group.
 *
 * Crash safety: a line is acknowledged only after fdatasync. A torn last line
 * (crash mid-write) was never acknowledged and is cut off when the log is opened.
 * A line written durably can be withdrawn (`retract`) when a later step of the
 * same operation failed: it is overwritten with spaces in place, which needs
 * no free space, and replay skips such a line.
 *
 * Every written line's span (offset and length) is reported, on append and on
 * replay, so that an index can hold where a record is instead of the record,
 * and read it back with `readLine`.
 */
export class AppendLog<R> {
  private lines: string[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;
  /** Set while lines appended lazily wait for a group to join. */
  private lazyTimer: NodeJS.Timeout | null = null;
  /** Rewrites asked for and not yet done: groups wait for them (see writeGroup). */
  private rewritesPending = 0;
  /** Physical operations (group writes, rewrites) run one after another on this chain. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  /** Set when a failed group could not be cut off: see cutFailedGroup. */
  private refusal: Error | null = null;
  /** Lines whose retraction failed: retried before anything else is written, which fails until it succeeds. */
  private unretracted: Array<{ span: LineSpan; text: string }> = [];
  /** For readLine; it follows a rewrite only when the new offsets are handed over (see rewriteLines). */
  private readFd: number | null = null;
  physicalWrites = 0;

  private constructor(
    readonly file: string,
    private handle: FileHandle,
    private size: number,
  ) {}

  /**
   * Opens (creating if needed) and replays every stored record, oldest first
   * (see replay for how `lines` are read).
   */
  static async open<R, Read = R>(file: string, onRecord: (record: Read, span: LineSpan) => void, lines: LineReading<Read> = {}): Promise<AppendLog<R>> {
    const size = await replay(file, onRecord, undefined, lines);
    const handle = await open(file, 'a', FILE_MODE);
    if (size === 0) await fsyncDir(dirname(file));
    return new AppendLog<R>(file, handle, size);
  }

  /**
   * Opens for appending without a replay, for a reader whose own index
   * already covers the file (its `size` bytes, checked here).
   */
  static async resume<R>(file: string, size: number): Promise<AppendLog<R>> {
    const handle = await open(file, 'a', FILE_MODE);
    const found = (await handle.stat()).size;
    if (found !== size) {
      await handle.close();
      throw new Error(`${file} is ${found} bytes, not the ${size} its index covers`);
    }
    return new AppendLog<R>(file, handle, size);
  }

  get byteSize(): number {
    return this.size;
  }

  /** Resolves once the record is on disk, with its span (null if a rewrite superseded it, see `rewrite`). */
  append(record: R): Promise<LineSpan | null> {
    if (this.closed) return Promise.reject(new Error(`append log ${this.file} is closed`));
    this.lines.push(JSON.stringify(record));
    return new Promise<LineSpan | null>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.scheduleGroup();
    });
  }

  /**
   * For records nobody waits for: they join the next group written for a
   * durable append, or are written within LAZY_FLUSH_MS, so that they never
   * cost a write and an fsync of their own while durable appends flow.
   * A failed write is reported through `onError`, the span of a written one to `onWritten`
   * (null if a rewrite superseded it).
   */
  appendLazily(record: R, onError: (error: unknown) => void, onWritten: (span: LineSpan | null) => void = () => undefined): void {
    if (this.closed) return onError(new Error(`append log ${this.file} is closed`));
    this.lines.push(JSON.stringify(record));
    this.waiters.push({ resolve: onWritten, reject: onError });
    if (this.scheduled || this.lazyTimer) return;
    this.lazyTimer = setTimeout(() => {
      this.lazyTimer = null;
      this.scheduleGroup();
    }, LAZY_FLUSH_MS);
  }

  /**
   * Many records in the next group: one promise for them all (resolved once
   * all are on disk), each line's span to `onWritten` (null if a rewrite
   * superseded it).
   */
  appendAll(records: readonly R[], onWritten: (index: number, span: LineSpan | null) => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`append log ${this.file} is closed`));
    if (records.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let left = records.length;
      let failed = false;
      const fail = (error: unknown) => {
        if (failed) return;
        failed = true;
        reject(error);
      };
      records.forEach((record, index) => {
        this.lines.push(JSON.stringify(record));
        this.waiters.push({
          resolve: (span) => {
            onWritten(index, span);
            if (--left === 0) resolve();
          },
          reject: fail,
        });
      });
      this.scheduleGroup();
    });
  }

  /**
   * Withdraws lines this log wrote (each given with its record, as appended):
   * each is overwritten with spaces where it is, and the file synced, before
   * this resolves. A line that is no longer where it was written (a rewrite
   * moved or dropped it) is left alone. Should the disk refuse even this, the
   * log takes no more writes until a retry of the retraction succeeds: no line
   * may be acknowledged after one that was answered as failed yet stays.
   */
  retract(lines: ReadonlyArray<{ span: LineSpan; record: R }>): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    this.unretracted.push(...lines.map(({ span, record }) => ({ span, text: JSON.stringify(record) })));
    return this.enqueue(() => this.retractPending());
  }

  private async retractPending(): Promise<void> {
    if (this.unretracted.length === 0) return;
    const lines = this.unretracted;
    try {
      const handle = await open(this.file, 'r+');
      try {
        let changed = false;
        for (const { span, text } of lines) {
          const expected = Buffer.from(text);
          if (expected.length !== span.length) continue;
          const found = Buffer.alloc(span.length);
          const { bytesRead } = await handle.read(found, 0, span.length, span.offset);
          if (bytesRead !== span.length || !found.equals(expected)) continue;
          await handle.write(Buffer.alloc(span.length, BLANK), 0, span.length, span.offset);
          changed = true;
        }
        if (changed) await handle.datasync();
      } finally {
        await handle.close();
      }
      this.unretracted = this.unretracted.filter((line) => !lines.includes(line));
    } catch (error) {
      throw asStorageError(error);
    }
  }

  private scheduleGroup(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.lazyTimer) {
      clearTimeout(this.lazyTimer);
      this.lazyTimer = null;
    }
    // setImmediate lets every append of the current turn join this write.
    setImmediate(() => {
      this.scheduled = false;
      void this.enqueue(() => this.writeGroup());
    });
  }

  /**
   * Replaces the whole log with `records` atomically (compaction, retention).
   * `records` must reflect every append made before this call: those pending
   * appends are superseded by it (and resolve with it, without a span of
   * their own); later appends follow it.
   */
  rewrite(records: Iterable<R>): Promise<void> {
    let text = '';
    for (const record of records) text += JSON.stringify(record) + '\n';
    return this.replace(async () => writeFileDurably(this.file, text));
  }

  /**
   * `rewrite` for a log indexed by offsets, which may hold far more than
   * memory should: the new file is written in chunks, most lines copied from
   * the current file by offset (read a window at a time), the others given as
   * text. `source` is taken as it is at this call.
   *
   * `onRewritten` gets the new lines' offsets, in the order of `source`, at
   * the moment readLine switches to the new file: until then it reads the old
   * one, so an index swapping its offsets there never reads a line in the
   * wrong file.
   */
  rewriteLines(source: LineSource, onRewritten: (offsets: Float64Array) => void): Promise<void> {
    this.readFd ??= openSync(this.file, 'r');
    return this.replace(() => this.writeReplacement(source), onRewritten);
  }

  private replace<T>(write: () => Promise<T>, onReplaced?: (written: T) => void): Promise<void> {
    const superseded = this.waiters;
    this.waiters = [];
    this.lines = [];
    this.rewritesPending += 1;
    return this.enqueue(async () => {
      this.rewritesPending -= 1;
      try {
        await this.handle.close();
        let written: T;
        try {
          written = await write();
        } finally {
          this.handle = await open(this.file, 'a', FILE_MODE);
          this.size = (await this.handle.stat()).size;
        }
        if (this.readFd !== null) {
          const fresh = openSync(this.file, 'r');
          closeSync(this.readFd);
          this.readFd = fresh;
        }
        onReplaced?.(written);
        for (const waiter of superseded) waiter.resolve(null);
      } catch (error) {
        for (const waiter of superseded) waiter.reject(error);
        throw error;
      } finally {
        // Lines held back by groups that ran while this rewrite waited.
        if (this.waiters.length > 0) this.scheduleGroup();
      }
    });
  }

  /** Writes `source` into a temporary file, fsyncs it and renames it over the log. */
  private async writeReplacement(source: LineSource): Promise<Float64Array> {
    const count = source.offsets.length;
    const offsets = new Float64Array(count);
    const temp = `${this.file}.tmp`;
    let current: FileHandle | undefined;
    try {
      const out = await open(temp, 'w', FILE_MODE);
      try {
        // Lines are copied into one output buffer and windows are reused: a
        // rewrite of a large log allocates a few megabytes, not its size.
        const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
        let chunkBytes = 0;
        let written = 0;
        /**
         * Windows of the current file, read a chunk at a time: several, so
         * that lines taken alternately from distant parts of the file (an
         * outbox's payloads, and the latest states of their deliveries, which
         * lie in the stretches each round of retries appended) each stream
         * from a window of their own instead of evicting each other.
         */
        const windows: Array<{ start: number; bytes: Buffer; memory: Buffer }> = [];
        for (let index = 0; index < count; index += 1) {
          const text = source.texts.get(index);
          let line: Buffer;
          if (text !== undefined) line = Buffer.from(text + '\n');
          else {
            const from = source.offsets[index]!;
            let window = windows.find(({ start, bytes }) => from >= start && from < start + bytes.length && bytes.indexOf(0x0a, from - start) !== -1);
            if (window) {
              // Most recently used last.
              windows.splice(windows.indexOf(window), 1);
              windows.push(window);
            } else {
              // The least recently used window's memory is read into again (its lines were copied out).
              let reused = windows.length >= WINDOWS ? windows.shift()!.memory : Buffer.allocUnsafe(WINDOW_BYTES);
              for (let size = reused.length; !window; size *= 2) {
                current ??= await open(this.file, 'r');
                if (reused.length < size) reused = Buffer.allocUnsafe(size);
                const { bytesRead } = await current.read(reused, 0, size, from);
                if (bytesRead === 0) throw new Error(`${this.file} ends before the line at byte ${from}`);
                if (reused.subarray(0, bytesRead).indexOf(0x0a) !== -1) window = { start: from, bytes: reused.subarray(0, bytesRead), memory: reused };
                else if (bytesRead < size) throw new Error(`${this.file} ends within the line at byte ${from}`);
              }
              windows.push(window);
            }
            const end = window.bytes.indexOf(0x0a, from - window.start);
            line = window.bytes.subarray(from - window.start, end + 1);
          }
          offsets[index] = written;
          written += line.length;
          if (chunkBytes + line.length > chunk.length) {
            await writeFully(out, chunk.subarray(0, chunkBytes));
            chunkBytes = 0;
          }
          if (line.length > chunk.length) await writeFully(out, line);
          else chunkBytes += line.copy(chunk, chunkBytes);
        }
        if (chunkBytes > 0) await writeFully(out, chunk.subarray(0, chunkBytes));
        await out.sync();
      } finally {
        await out.close();
      }
      await rename(temp, this.file);
      await fsyncDir(dirname(this.file));
      return offsets;
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw asStorageError(error);
    } finally {
      await current?.close();
    }
  }

  /** Resolves once everything appended so far has been written (or has failed). */
  async drain(): Promise<void> {
    if (this.lazyTimer) this.scheduleGroup();
    while (this.scheduled || this.waiters.length > 0) {
      await new Promise((resolve) => setImmediate(resolve));
      await this.chain;
    }
    await this.chain;
  }

  /**
   * The line at `offset`, read synchronously: a listing reads a page of lines
   * between two turns of the event loop, so no rewrite can swap the file
   * under it.
   */
  readLine(offset: number): string {
    return this.withReader((fd) => readLineAt(fd, offset));
  }

  /** The `length` bytes at `offset`, read synchronously (see readLine) into a buffer of `capacity` bytes. */
  readBytes(offset: number, length: number, capacity = length): Buffer {
    return this.withReader((fd) => readBytes(fd, offset, length, capacity));
  }

  /** The line whose span is known, read synchronously (see readLine). */
  readSpan(offset: number, length: number): string {
    return this.withReader((fd) => readSpan(fd, offset, length));
  }

  /**
   * The descriptor reads go through, kept open while the log is. After
   * close (the checkpoint a stop writes still reads the lines of records a
   * failed write left held) each read opens and closes its own, so that a
   * closed log holds no descriptor.
   */
  private withReader<T>(read: (fd: number) => T): T {
    if (!this.closed) return read((this.readFd ??= openSync(this.file, 'r')));
    const fd = openSync(this.file, 'r');
    try {
      return read(fd);
    } finally {
      closeSync(fd);
    }
  }

  async close(): Promise<void> {
    await this.drain();
    // A retraction the disk refused so far gets a last try: the next start would replay the line.
    await this.enqueue(() => this.retractPending()).catch(() => undefined);
    this.closed = true;
    await this.handle.close();
    if (this.readFd !== null) closeSync(this.readFd);
    this.readFd = null;
  }

  private enqueue(operation: () => Promise<void>): Promise<void> {
    const run = this.chain.then(operation);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async writeGroup(): Promise<void> {
    // A group queued before a rewrite runs before it; any line it found now was
    // appended after the rewrite was asked for, and written to the file the
    // rewrite is about to replace it would be lost. They wait for the rewrite.
    if (this.waiters.length === 0 || this.rewritesPending > 0) return;
    const waiters = this.waiters;
    const spans: LineSpan[] = [];
    let offset = this.size;
    for (const line of this.lines) {
      const length = Buffer.byteLength(line);
      spans.push({ offset, length });
      offset += length + 1;
    }
    const lines = this.lines;
    const bytes = Buffer.from(lines.join('\n') + '\n');
    this.waiters = [];
    this.lines = [];
    try {
      await this.retractPending();
      if (this.refusal) throw this.refusal;
      await writeFully(this.handle, bytes);
      await this.handle.datasync();
      this.size += bytes.length;
      this.physicalWrites += 1;
      waiters.forEach((waiter, index) => waiter.resolve(spans[index]!));
    } catch (error) {
      if (!this.refusal) await this.cutFailedGroup(spans, lines);
      const mapped = asStorageError(error);
      for (const waiter of waiters) waiter.reject(mapped);
    }
  }

  /**
   * Whatever part of a failed group reached the file is cut off, so that the
   * next append does not follow a torn line and no line answered as failed is
   * replayed at the next start (the write may have landed while its fdatasync
   * failed). Should the truncation fail too, nothing more may follow those
   * lines in this file: the log refuses writes until it is opened again (a
   * torn last line is cut then), and the group's complete lines are withdrawn
   * by retraction.
   */
  private async cutFailedGroup(spans: readonly LineSpan[], lines: readonly string[]): Promise<void> {
    try {
      await this.handle.truncate(this.size);
    } catch (error) {
      this.refusal ??= asStorageError(error);
      spans.forEach((span, index) => this.unretracted.push({ span, text: lines[index]! }));
    }
  }
}

/** What a retracted line is overwritten with: JSON lines never start with a space, so replay knows it. */
const BLANK = 0x20;

/** A write may be short (disk nearly full); only ENOSPC on the next one says why. */
async function writeFully(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let offset = 0; offset < bytes.length; ) {
    offset += (await handle.write(bytes, offset, bytes.length - offset)).bytesWritten;
  }
}

/**
 * Lines that replay hands over by span without parsing them: those starting
 * with `prefix` (a large payload that an index only needs to find again).
 */
export interface OpaqueLines {
  prefix: Buffer;
  /** `line` is valid during the call only (a view of the read buffer). */
  onLine: (span: LineSpan, line: Buffer) => void;
}

/** How replay reads a log's lines. */
export interface LineReading<R> {
  /** Reads a line's record (by default, the whole line as JSON; a log whose lines start with a small key may read only that). */
  decode?: (line: Buffer) => R;
  opaque?: OpaqueLines;
  /** Where to start: the end of a line (a reader that restored what comes before from its own index). */
  from?: number;
}

/**
 * Replays every complete line (blank ones, withdrawn by `retract`, are
 * skipped; `opaque` ones handed over unparsed) and returns the byte length of that prefix. An
 * unterminated final fragment is a torn write that was never acknowledged: it is
 * cut off. A complete line that is not JSON is corruption: the start stops.
 * `afterChunk` is awaited after each chunk's lines were handed over, so that a
 * reader can write out what it gathered before more is read (db import).
 */
export async function replay<R>(
  file: string,
  onRecord: (record: R, span: LineSpan) => void,
  afterChunk?: () => Promise<void>,
  { decode = (line) => JSON.parse(line.toString('utf8')) as R, opaque, from = 0 }: LineReading<R> = {},
): Promise<number> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if (isMissing(error)) return 0;
    throw error;
  }
  let fileSize = 0;
  /** Bytes of complete lines so far: the file offset of `pending`'s first byte. */
  let intact = from;
  let lineNumber = 0;
  try {
    fileSize = (await handle.stat()).size;
    // Read in large chunks into one buffer and cut lines out of them synchronously: a
    // large log replays without leaving megabytes of dead buffers to the allocator.
    let buffer = Buffer.allocUnsafe(Math.max(0, Math.min(CHUNK_BYTES, fileSize - from)));
    /** Bytes at the front of `buffer`: the start of a line the next read completes. */
    let carried = 0;
    for (let position = from; position < fileSize; ) {
      if (carried === buffer.length) {
        const larger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(larger, 0, 0, carried);
        buffer = larger;
      }
      const { bytesRead } = await handle.read(buffer, carried, Math.min(buffer.length - carried, fileSize - position), position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const data = buffer.subarray(0, carried + bytesRead);
      let start = 0;
      for (let end = data.indexOf(0x0a, carried); end !== -1; end = data.indexOf(0x0a, start)) {
        lineNumber += 1;
        // Blank: an empty line, or one withdrawn by `retract`.
        if (end > start && data[start] !== BLANK) {
          if (opaque && end - start >= opaque.prefix.length && data.compare(opaque.prefix, 0, opaque.prefix.length, start, start + opaque.prefix.length) === 0) {
            opaque.onLine({ offset: intact + start, length: end - start }, data.subarray(start, end));
            start = end + 1;
            continue;
          }
          let record: R;
          try {
            record = decode(data.subarray(start, end));
          } catch {
            throw new StartupError(
              `data file ${file} is corrupt at line ${lineNumber}${from > 0 ? ` after byte ${from}` : ''}; the daemon will not start and has not modified it`,
            );
          }
          onRecord(record, { offset: intact + start, length: end - start });
        }
        start = end + 1;
      }
      intact += start;
      carried = data.length - start;
      buffer.copy(buffer, 0, start, data.length);
      if (afterChunk) await afterChunk();
    }
  } finally {
    await handle.close();
  }
  if (intact < fileSize) {
    await truncate(file, intact);
    tornTails.set(file, fileSize - intact);
  }
  return intact;
}

/** Torn tails cut by `replay`, by file, until the daemon's start-up report takes them. */
const tornTails = new Map<string, number>();

/** The torn tails cut under `dir` since the last call, forgotten once taken. */
export function takeTornTails(dir: string): Array<{ file: string; bytes: number }> {
  const taken: Array<{ file: string; bytes: number }> = [];
  for (const [file, bytes] of tornTails) {
    if (!file.startsWith(`${dir}/`)) continue;
    taken.push({ file, bytes });
    tornTails.delete(file);
  }
  return taken;
}
