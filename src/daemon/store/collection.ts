import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { Low, type Adapter } from 'lowdb';
import { StartupError } from '../errors.js';
import { asStorageError, isMissing, writeFileDurably } from '../files.js';

export interface Document {
  schemaVersion: number;
}

export interface CollectionSpec<T extends Document> {
  file: string;
  schemaVersion: number;
  create: () => T;
  /** migrations[n] upgrades a document of schemaVersion n to n + 1. */
  migrations?: Record<number, (document: any) => any>;
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * lowdb adapter that coalesces before it serialises: any number of write() calls
 * made while a physical write is pending or running share the next one, which
 * costs one JSON.stringify and one fsync. (lowdb's stock adapter stringifies on
 * every write() call.) Each write() resolves only once its state is on disk.
 */
class CoalescingFileAdapter<T> implements Adapter<T> {
  private latest: T | null = null;
  private queued: Waiter[] = [];
  private flushing = false;
  physicalWrites = 0;

  constructor(
    private readonly file: string,
    private readonly onWriteFailed: () => void,
  ) {}

  async read(): Promise<T | null> {
    return readDocument<T>(this.file);
  }

  write(data: T): Promise<void> {
    this.latest = data;
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // setImmediate lets every mutation of the current turn join this write.
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Resolves once everything written so far is on disk (or failed). */
  async drain(): Promise<void> {
    while (this.flushing) await new Promise((resolve) => setImmediate(resolve));
  }

  private async flush(): Promise<void> {
    while (this.queued.length > 0) {
      const batch = this.queued;
      this.queued = [];
      try {
        await writeFileDurably(this.file, JSON.stringify(this.latest));
        this.physicalWrites += 1;
        for (const waiter of batch) waiter.resolve();
      } catch (error) {
        // Every mutation since the last good write is in memory only: revert all
        // of them and fail every caller that is still waiting, so that no request
        // is told "done" for state that is not on disk.
        const failed = batch.concat(this.queued);
        this.queued = [];
        this.onWriteFailed();
        for (const waiter of failed) waiter.reject(error);
      }
    }
    this.flushing = false;
  }
}

function readDocument<T>(file: string): T | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new StartupError(
      `data file ${file} is not valid JSON; the daemon will not start and has not modified it. ` +
        `Restore it from a backup or remove it to start that collection empty.`,
    );
  }
}

/**
 * One JSON document on disk, held in memory. Reads are plain property access on
 * `data`; every change goes through update(), which resolves after the change is
 * durable. A mutate function must validate before it changes anything: if it
 * throws, nothing is written, and any partial change would stay in memory.
 */
export class Collection<T extends Document> {
  private readonly resetListeners: Array<() => void> = [];
  /** Why the last revert could not read the file back (see revertToDisk); null when memory is what is on disk. */
  private unreverted: unknown = null;

  private constructor(
    private readonly low: Low<T>,
    private readonly adapter: CoalescingFileAdapter<T>,
    readonly file: string,
  ) {}

  static async open<T extends Document>(spec: CollectionSpec<T>): Promise<Collection<T>> {
    let collection: Collection<T> | undefined;
    const adapter = new CoalescingFileAdapter<T>(spec.file, () => collection?.revertToDisk());
    const low = new Low<T>(adapter, spec.create());
    collection = new Collection(low, adapter, spec.file);

    const stored = await adapter.read();
    if (stored === null) {
      await low.write();
      return collection;
    }
    low.data = upgrade(stored, spec);
    if (stored.schemaVersion !== spec.schemaVersion) await low.write();
    return collection;
  }

  get data(): T {
    return this.low.data;
  }

  get physicalWrites(): number {
    return this.adapter.physicalWrites;
  }

  async update<R>(mutate: (data: T) => R): Promise<R> {
    // Memory that still holds changes of a failed write must not be written by this one.
    if (this.unreverted) {
      this.revertToDisk();
      if (this.unreverted) throw asStorageError(this.unreverted);
    }
    const result = mutate(this.low.data);
    await this.low.write();
    return result;
  }

  /** Derived in-memory state (indexes) must rebuild when a failed write reverts the data. */
  onReset(listener: () => void): void {
    this.resetListeners.push(listener);
  }

  flush(): Promise<void> {
    return this.adapter.drain();
  }

  /**
   * The file still holds the last good state (writes replace it atomically).
   * Reading it back, rather than keeping a copy of every document's text,
   * costs nothing until a write fails. Should the disk refuse even that read,
   * memory stays as it is, and the next update reverts it first or is refused:
   * it would otherwise write the changes that were answered as failed.
   */
  private revertToDisk(): void {
    try {
      const stored = readDocument<T>(this.file);
      if (stored !== null) this.low.data = stored;
    } catch (error) {
      this.unreverted = error;
      return;
    }
    this.unreverted = null;
    for (const listener of this.resetListeners) listener();
  }
}

function upgrade<T extends Document>(stored: Document, spec: CollectionSpec<T>): T {
  const name = basename(spec.file);
  if (typeof stored !== 'object' || stored === null || typeof stored.schemaVersion !== 'number') {
    throw new StartupError(`data file ${spec.file} has no schemaVersion; it is not a ${name} written by platform`);
  }
  if (stored.schemaVersion > spec.schemaVersion) {
    throw new StartupError(
      `data file ${spec.file} has schemaVersion ${stored.schemaVersion}, newer than this platform supports ` +
        `(${spec.schemaVersion}); upgrade platform before starting it on this data directory`,
    );
  }
  let document: any = stored;
  while (document.schemaVersion < spec.schemaVersion) {
    const migrate = spec.migrations?.[document.schemaVersion];
    if (!migrate) throw new StartupError(`data file ${spec.file}: no migration from schemaVersion ${document.schemaVersion}`);
    document = { ...migrate(document), schemaVersion: document.schemaVersion + 1 };
  }
  return document as T;
}
