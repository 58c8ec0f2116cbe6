import { closeSync, openSync } from 'node:fs';
import { readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { AppendLog, type LineSpan } from '../append-log.js';
import { Column, FingerprintTable, hash32, readSpan } from '../line-index.js';
import { notFound, StartupError } from '../../errors.js';
import { unbounded } from '../../paging.js';
import { fsyncDir, isMissing, writeFileDurably } from '../../files.js';
import type { DeadLetterFilter, StoredDeadLetter } from '../../dispatch/types.js';
import { maskCredentials, showsCredentials } from '../../dispatch/url-credentials.js';

/** What a letter is found and filtered by. */
interface LetterKey {
  id: string;
  deliveryId: string;
  workspaceId: string;
  eventKey: string;
  extensionKey: string;
  subscriptionId: string | null;
}

const keyMatches = (filter: DeadLetterFilter, key: LetterKey) =>
  (filter.workspaceId === undefined || key.workspaceId === filter.workspaceId) &&
  (filter.eventKey === undefined || key.eventKey === filter.eventKey) &&
  (filter.extensionKey === undefined || key.extensionKey === filter.extensionKey);

/**
 * `add` holds a whole letter, after its key: the start reads only the key of
 * each line (a letter holds its event, up to 256 KiB); `remove` withdraws
 * letters (replayed or discarded).
 */
type Line = { t: 'add'; key: LetterKey; letter: StoredDeadLetter } | { t: 'remove'; ids: string[] };
type KeyLine = { t: 'add'; key: LetterKey } | Extract<Line, { t: 'remove' }>;

const ADD_PREFIX = Buffer.from('{"t":"add","key":');
/** Where an `add` line's key ends: JSON escapes every quote inside a string, so this occurs first after the key. */
const LETTER_FIELD = ',"letter":';
/** Bytes read of a line for its key, most of the time all of it. */
const KEY_READ_BYTES = 2048;

const lineOf = (letter: StoredDeadLetter): Line => ({ t: 'add', key: keyOf(letter), letter });

function keyOf(letter: StoredDeadLetter): LetterKey {
  return {
    id: letter.id,
    deliveryId: letter.deliveryId,
    workspaceId: letter.event.tenantId,
    eventKey: letter.event.eventKey,
    extensionKey: letter.subscriber.extensionKey,
    subscriptionId: letter.subscriber.subscriptionId,
  };
}

/** An `add` line's key alone, from the start of its text; undefined if `text` ends before the key does. */
function keyIn(text: string): LetterKey | undefined {
  const end = text.indexOf(LETTER_FIELD);
  return end < 0 ? undefined : (JSON.parse(text.slice(0, end) + '}') as { key: LetterKey }).key;
}

/** A line as the start reads it: an `add` line's key, not its letter. */
function decodeKeyLine(line: Buffer): KeyLine {
  if (line.subarray(0, ADD_PREFIX.length).equals(ADD_PREFIX)) {
    const end = line.indexOf(LETTER_FIELD);
    if (end > 0) return { t: 'add', key: (JSON.parse(line.toString('utf8', 0, end) + '}') as { key: LetterKey }).key };
  }
  return JSON.parse(line.toString('utf8')) as KeyLine;
}

/** Compact once the log holds this many lines more than twice the letters. */
const COMPACT_SLACK = 10_000;

/**
 * Distinct values of a filterable field by fingerprint: a count by the
 * fingerprint column is exact unless two values share one (then each
 * candidate is confirmed on its letter). Holds each distinct value once
 * (workspaces, event keys, extension keys: not one per letter).
 */
class Vocabulary {
  /** null: two values share the fingerprint. */
  private readonly values = new Map<number, string | null>();

  note(value: string): number {
    const hash = hash32(value);
    const known = this.values.get(hash);
    if (known === undefined) this.values.set(hash, value);
    else if (known !== null && known !== value) this.values.set(hash, null);
    return hash;
  }

  /** Whether the fingerprint of `value` stands for it alone. */
  exact(value: string): boolean {
    return this.values.get(hash32(value)) === value;
  }
}

/**
 * Every line of the log that adds a letter, in log order, as columns: where
 * its line is, fingerprints of what letters are found and filtered by, and
 * whether it is still a letter: 41 bytes a line, plus 12-byte slots in the
 * tables by letter id and by delivery id (some 20 bytes a letter each).
 */
class LetterColumns {
  length = 0;
  /** In memory only: a cursor of bulk operations, stable across compaction (which keeps the order). */
  readonly seqs = new Column(Float64Array);
  readonly offsets = new Column(Float64Array);
  readonly lengths = new Column(Uint32Array);
  readonly idHashes = new Column(Uint32Array);
  readonly deliveryHashes = new Column(Uint32Array);
  readonly workspaceHashes = new Column(Uint32Array);
  readonly eventKeyHashes = new Column(Uint32Array);
  readonly extensionKeyHashes = new Column(Uint32Array);
  readonly alive = new Column(Uint8Array);
  readonly columns = [this.seqs, this.offsets, this.lengths, this.idHashes, this.deliveryHashes, this.workspaceHashes, this.eventKeyHashes, this.extensionKeyHashes, this.alive];

  /** The index of the first entry with a sequence above `seq`. */
  after(seq: number): number {
    let low = 0;
    let high = this.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.seqs.get(middle) <= seq) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

/**
 * Dead letters (dead-letters.log): deliveries that failed for good, until
 * replayed or discarded. An append-only log of `add` and `remove` lines,
 * rewritten without the removed letters when they dominate; memory holds the
 * columns above, never a letter: a letter is read by its span when it is got
 * or listed.
 *
 * dead-letters.json, the whole collection in one document written by earlier
 * versions, is migrated once at open: the log is written durably under its
 * name (by rename), then the JSON removed. Should both exist (a stop between
 * the two steps), the log is complete and wins; the JSON is removed.
 */
export class DeadLetterFile {
  private log!: AppendLog<Line>;
  private readonly index = new LetterColumns();
  /** Letter id fingerprint to index + 1, of letters alive. */
  private readonly byId = new FingerprintTable();
  /** Delivery id fingerprint to index + 1, of letters alive. */
  private readonly byDelivery = new FingerprintTable();
  private readonly workspaces = new Vocabulary();
  private readonly eventKeys = new Vocabulary();
  private readonly extensionKeys = new Vocabulary();
  private live = 0;
  private lines = 0;
  private nextSeq = 1;
  /** Appends under way: a compaction starts only when there are none, and appends wait for it. */
  private inflight = 0;
  private compacting: Promise<void> | null = null;
  /** Reads a span of the log: while it is replayed at open, from a reader of its own. */
  private readSpan: (offset: number, length: number) => string = (offset, length) => this.log.readSpan(offset, length);

  private constructor(private readonly reportError: (error: unknown) => void) {}

  static async open(dataDir: string, reportError: (error: unknown) => void = () => undefined): Promise<DeadLetterFile> {
    const file = join(dataDir, 'dead-letters.log');
    await migrateJson(join(dataDir, 'dead-letters.json'), file);
    const letters = new DeadLetterFile(reportError);
    let reader: number | null = null;
    letters.readSpan = (offset, length) => readSpan((reader ??= openSync(file, 'r')), offset, length);
    try {
      letters.log = (await AppendLog.open<KeyLine>(
        file,
        (line, span) => {
          letters.lines += 1;
          if (line.t === 'add') letters.indexLetter(line.key, span);
          else letters.forget(line.ids);
        },
        { decode: decodeKeyLine },
      )) as unknown as AppendLog<Line>; // replay reads KeyLines; what is appended are Lines
    } finally {
      if (reader !== null) closeSync(reader);
      letters.readSpan = (offset, length) => letters.log.readSpan(offset, length);
    }
    letters.compactIfSparse();
    return letters;
  }

  get size(): number {
    return this.live;
  }

  get(id: string): StoredDeadLetter {
    const index = this.indexOf(id);
    if (index < 0) throw notFound(`dead letter ${id} not found`);
    return this.letterAt(index);
  }

  has(id: string): boolean {
    return this.indexOf(id) >= 0;
  }

  /** Whether a dead letter holds this delivery. */
  holdsDelivery(deliveryId: string): boolean {
    for (const slot of this.byDelivery.find(hash32(deliveryId))) {
      if (this.keyAt(this.byDelivery.value(slot) - 1).deliveryId === deliveryId) return true;
    }
    return false;
  }

  /**
   * Newest first, into `budget` until it is full. Filters run on the
   * fingerprint columns; the page's letters are read, the others only
   * counted, unless a filter value shares its fingerprint with another
   * value: then each is confirmed on its key.
   */
  list(filter: DeadLetterFilter, page: { limit: number; offset: number }, budget = unbounded<StoredDeadLetter>()): { items: StoredDeadLetter[]; total: number } {
    const exact =
      (filter.workspaceId === undefined || this.workspaces.exact(filter.workspaceId)) &&
      (filter.eventKey === undefined || this.eventKeys.exact(filter.eventKey)) &&
      (filter.extensionKey === undefined || this.extensionKeys.exact(filter.extensionKey));
    const items: StoredDeadLetter[] = [];
    let total = 0;
    let filling = true;
    for (const index of this.candidates(filter, this.index.length - 1, -1)) {
      if (!exact && !keyMatches(filter, this.keyAt(index))) continue;
      if (filling && total >= page.offset && items.length < page.limit) {
        const letter = this.letterAt(index);
        if (budget.admit(letter)) items.push(letter);
        else filling = false;
      }
      total += 1;
    }
    return { items, total };
  }

  /**
   * Oldest first: up to `limit` matching letters after the cursor `after`
   * (null: from the oldest), as their ids and subscriptions, read from their
   * keys; `next` is the cursor of the next batch, null when there is none.
   */
  matchingIds(filter: DeadLetterFilter, after: string | null, limit: number): { letters: Array<{ id: string; subscriptionId: string | null }>; next: string | null } {
    const from = after === null ? 0 : this.index.after(Number(after));
    const letters: Array<{ id: string; subscriptionId: string | null }> = [];
    let last = Number(after ?? 0);
    for (const index of this.candidates(filter, from, this.index.length)) {
      if (letters.length === limit) return { letters, next: String(last) };
      const key = this.keyAt(index);
      last = this.index.seqs.get(index);
      if (keyMatches(filter, key)) letters.push({ id: key.id, subscriptionId: key.subscriptionId });
    }
    return { letters, next: null };
  }

  /** How many letters match, by subscription, from their keys. */
  countBySubscription(filter: DeadLetterFilter): Map<string | null, number> {
    const counts = new Map<string | null, number>();
    for (const index of this.candidates(filter, 0, this.index.length)) {
      const key = this.keyAt(index);
      if (keyMatches(filter, key)) counts.set(key.subscriptionId, (counts.get(key.subscriptionId) ?? 0) + 1);
    }
    return counts;
  }

  /** Every letter, oldest first, read one at a time (for `platform db import`). */
  *all(): Generator<StoredDeadLetter> {
    for (let index = 0; index < this.index.length; index += 1) if (this.index.alive.get(index)) yield this.letterAt(index);
  }

  /** One letter per delivery: a delivery dead-lettered again (after a crash) replaces its letter. Durable before it resolves. */
  async add(letter: StoredDeadLetter): Promise<void> {
    await this.appendDurably(lineOf(letter), (span) => this.indexLetter(keyOf(letter), span));
  }

  /** Durable before it resolves; ids that are not letters are left out. */
  async remove(ids: readonly string[]): Promise<void> {
    const present = ids.filter((id) => this.has(id));
    if (present.length === 0) return;
    await this.appendDurably({ t: 'remove', ids: present }, () => this.forget(present));
  }

  async close(): Promise<void> {
    await this.compacting;
    await this.log.close();
  }

  // The index

  private async appendDurably(line: Line, apply: (span: LineSpan) => void): Promise<void> {
    while (this.compacting) await this.compacting;
    this.inflight += 1;
    try {
      const span = await this.log.append(line);
      this.lines += 1;
      // No rewrite runs while appends are under way: every line has its span.
      apply(span!);
    } finally {
      this.inflight -= 1;
      this.compactIfSparse();
    }
  }

  private indexLetter(letter: LetterKey, span: LineSpan): void {
    for (const slot of [...this.byDelivery.find(hash32(letter.deliveryId))]) {
      const index = this.byDelivery.value(slot) - 1;
      if (this.keyAt(index).deliveryId === letter.deliveryId) this.kill(index);
    }
    const columns = this.index;
    const index = columns.length++;
    for (const column of columns.columns) column.reserve(columns.length);
    columns.seqs.set(index, this.nextSeq++);
    columns.offsets.set(index, span.offset);
    columns.lengths.set(index, span.length);
    columns.idHashes.set(index, hash32(letter.id));
    columns.deliveryHashes.set(index, hash32(letter.deliveryId));
    columns.workspaceHashes.set(index, this.workspaces.note(letter.workspaceId));
    columns.eventKeyHashes.set(index, this.eventKeys.note(letter.eventKey));
    columns.extensionKeyHashes.set(index, this.extensionKeys.note(letter.extensionKey));
    columns.alive.set(index, 1);
    this.byId.add(hash32(letter.id), index + 1);
    this.byDelivery.add(hash32(letter.deliveryId), index + 1);
    this.live += 1;
  }

  private forget(ids: readonly string[]): void {
    for (const id of ids) {
      const index = this.indexOf(id);
      if (index >= 0) this.kill(index);
    }
  }

  private kill(index: number): void {
    if (!this.index.alive.get(index)) return;
    this.index.alive.set(index, 0);
    this.live -= 1;
    const idSlot = this.byId.slotOf(this.index.idHashes.get(index), index + 1);
    if (idSlot >= 0) this.byId.remove(idSlot);
    const deliverySlot = this.byDelivery.slotOf(this.index.deliveryHashes.get(index), index + 1);
    if (deliverySlot >= 0) this.byDelivery.remove(deliverySlot);
  }

  private indexOf(id: string): number {
    for (const slot of this.byId.find(hash32(id))) {
      const index = this.byId.value(slot) - 1;
      if (this.keyAt(index).id === id) return index;
    }
    return -1;
  }

  /** Indexes of letters alive whose fingerprints match the filter, from `from` towards `to` (excluded). */
  private *candidates(filter: DeadLetterFilter, from: number, to: number): Generator<number> {
    const columns = this.index;
    const workspace = filter.workspaceId === undefined ? null : hash32(filter.workspaceId);
    const eventKey = filter.eventKey === undefined ? null : hash32(filter.eventKey);
    const extensionKey = filter.extensionKey === undefined ? null : hash32(filter.extensionKey);
    const step = to > from ? 1 : -1;
    for (let index = from; index !== to; index += step) {
      if (!columns.alive.get(index)) continue;
      if (workspace !== null && columns.workspaceHashes.get(index) !== workspace) continue;
      if (eventKey !== null && columns.eventKeyHashes.get(index) !== eventKey) continue;
      if (extensionKey !== null && columns.extensionKeyHashes.get(index) !== extensionKey) continue;
      yield index;
    }
  }

  /** The letter's key: the start of its line, most of the time in one short read. */
  private keyAt(index: number): LetterKey {
    const [offset, length] = [this.index.offsets.get(index), this.index.lengths.get(index)];
    return keyIn(this.readSpan(offset, Math.min(length, KEY_READ_BYTES))) ?? keyIn(this.readSpan(offset, length))!;
  }

  private letterAt(index: number): StoredDeadLetter {
    return (JSON.parse(this.readSpan(this.index.offsets.get(index), this.index.lengths.get(index))) as Extract<Line, { t: 'add' }>).letter;
  }

  private compactIfSparse(): void {
    if (this.inflight > 0 || this.compacting || this.lines <= this.live * 2 + COMPACT_SLACK) return;
    this.compacting = this.compact()
      .catch(this.reportError)
      .finally(() => (this.compacting = null));
  }

  /** Rewrites the log as one `add` line per letter alive (copied), and the columns and tables without the others. */
  private compact(): Promise<void> {
    const columns = this.index;
    const kept: number[] = [];
    for (let index = 0; index < columns.length; index += 1) if (columns.alive.get(index)) kept.push(index);
    const offsets = Float64Array.from(kept, (index) => columns.offsets.get(index));
    return this.log.rewriteLines({ offsets, texts: new Map() }, (rewritten) => {
      kept.forEach((from, to) => {
        for (const column of columns.columns) column.set(to, column.get(from));
        columns.offsets.set(to, rewritten[to]!);
      });
      columns.length = kept.length;
      for (const column of columns.columns) column.trim(kept.length);
      this.byId.clear();
      this.byDelivery.clear();
      for (let index = 0; index < columns.length; index += 1) {
        this.byId.add(columns.idHashes.get(index), index + 1);
        this.byDelivery.add(columns.deliveryHashes.get(index), index + 1);
      }
      this.lines = kept.length;
    });
  }
}

/** Moves dead-letters.json (earlier versions) into the log, masking subscriber URL credentials it may still show. */
async function migrateJson(json: string, file: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(json, 'utf8');
  } catch (error) {
    if (isMissing(error)) return;
    throw error;
  }
  const logExists = await stat(file).then(
    () => true,
    (error: unknown) => {
      if (isMissing(error)) return false;
      throw error;
    },
  );
  if (!logExists) {
    let letters: StoredDeadLetter[];
    try {
      const document = JSON.parse(text) as { schemaVersion?: unknown; deadLetters?: StoredDeadLetter[] };
      if (document.schemaVersion !== 1 || !Array.isArray(document.deadLetters)) throw new Error('not a document of dead letters');
      letters = document.deadLetters;
    } catch {
      throw new StartupError(`data file ${json} is not a collection of dead letters written by platform; the daemon will not start and has not modified it`);
    }
    for (const { subscriber } of letters) if (showsCredentials(subscriber.serviceBaseUrl)) subscriber.serviceBaseUrl = maskCredentials(subscriber.serviceBaseUrl!);
    await writeFileDurably(file, letters.map((letter) => JSON.stringify(lineOf(letter)) + '\n').join(''));
  }
  await unlink(json);
  await fsyncDir(join(file, '..'));
}
