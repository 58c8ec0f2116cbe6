import { AppendLog } from '../store/append-log.js';

export const REQUEST_OUTCOMES = ['ACCEPTED', 'REJECTED', 'FAILED', 'DUPLICATE'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

/** One inbound call as the ADMIN API shows it. Headers are masked and bounded before they get here. */
export interface WebhookRequestEntry {
  id: string;
  receivedAt: string;
  outcome: RequestOutcome;
  reason: string;
  eventId?: string;
  headers: Record<string, string>;
  bodyExcerpt: string;
}

interface RequestRecord {
  extensionKey: string;
  /** Per extension, one more than the previous call: cursors page by it, and it survives compaction and restarts. */
  seq: number;
  entry: WebhookRequestEntry;
}

/** Each extension keeps its latest calls; older ones are dropped (from memory at once, from disk at compaction). */
export const REQUESTS_PER_EXTENSION = 1000;

/** Where a page stops: calls before `before`, down to `floor` (the oldest call kept when the first page was read). */
export interface RequestWindow {
  before: number;
  floor: number;
}

export interface RequestPage {
  entries: WebhookRequestEntry[];
  /** Absent on the last page. */
  next?: RequestWindow;
  /** Set when the window reaches calls dropped since the first page was read: they can no longer be listed. */
  lost: boolean;
}

/**
 * The inbound webhook calls of every extension, as an append-only log
 * (webhook-requests.log) compacted like the chat log: once it holds twice the
 * lines the extensions keep, it is rewritten to what they keep. Entries are
 * diagnostics: they are appended lazily (group commit), never waited for.
 */
export class WebhookRequestLog {
  private compacting: Promise<void> | null = null;
  private lastWriteError: unknown = null;

  private constructor(
    private readonly log: AppendLog<RequestRecord>,
    private readonly extensions: Map<string, RequestRecord[]>,
    private lines: number,
    private retained: number,
    private readonly onWriteError: (error: unknown) => void,
  ) {}

  static async open(file: string, onWriteError: (error: unknown) => void): Promise<WebhookRequestLog> {
    const extensions = new Map<string, RequestRecord[]>();
    let lines = 0;
    let retained = 0;
    const log = await AppendLog.open<RequestRecord>(file, (record) => {
      lines += 1;
      retained += 1 - keep(extensions, record);
    });
    return new WebhookRequestLog(log, extensions, lines, retained, onWriteError);
  }

  /** Kept in memory at once (the API shows it before the call is answered); on disk within a group commit. */
  record(extensionKey: string, entry: WebhookRequestEntry): void {
    const seq = (this.extensions.get(extensionKey)?.at(-1)?.seq ?? 0) + 1;
    const record: RequestRecord = { extensionKey, seq, entry };
    this.retained += 1 - keep(this.extensions, record);
    this.lines += 1;
    this.log.appendLazily(record, (error) => {
      // One failed group rejects each of its records with the same error: report it once.
      if (error !== this.lastWriteError) this.onWriteError(error);
      this.lastWriteError = error;
    });
    this.compactIfWorthIt();
  }

  /** The window of a first page: every call kept now. */
  firstWindow(extensionKey: string): RequestWindow {
    const records = this.extensions.get(extensionKey) ?? [];
    return { before: (records.at(-1)?.seq ?? 0) + 1, floor: records[0]?.seq ?? 1 };
  }

  /** Newest first, at most `limit` calls of the window. */
  page(extensionKey: string, window: RequestWindow, limit: number): RequestPage {
    const records = this.extensions.get(extensionKey) ?? [];
    const oldestKept = records[0]?.seq ?? Number.POSITIVE_INFINITY;
    const entries: WebhookRequestEntry[] = [];
    // Sequence numbers are consecutive within the kept records, so the newest wanted one is found by arithmetic.
    const newestKept = records.at(-1)?.seq ?? 0;
    let index = records.length - 1 - Math.max(0, newestKept - (window.before - 1));
    let last = window.before;
    while (index >= 0 && entries.length < limit && records[index]!.seq >= window.floor) {
      entries.push(records[index]!.entry);
      last = records[index]!.seq;
      index -= 1;
    }
    const lost = entries.length < limit && last > window.floor && oldestKept > window.floor;
    return { entries, lost, ...(entries.length > 0 && last > window.floor ? { next: { before: last, floor: window.floor } } : {}) };
  }

  async close(): Promise<void> {
    if (this.compacting) await this.compacting;
    await this.log.close();
  }

  private compactIfWorthIt(): void {
    if (this.compacting || this.lines < 2 * this.retained + REQUESTS_PER_EXTENSION) return;
    const records = [...this.extensions.values()].flat();
    this.compacting = this.log
      .rewrite(records)
      .then(() => {
        this.lines = records.length;
      })
      .catch((error: unknown) => this.onWriteError(error))
      .finally(() => (this.compacting = null));
  }
}

/** Adds the call to its extension; returns how many old calls the extension dropped. */
function keep(extensions: Map<string, RequestRecord[]>, record: RequestRecord): number {
  let records = extensions.get(record.extensionKey);
  if (!records) {
    records = [];
    extensions.set(record.extensionKey, records);
  }
  records.push(record);
  const excess = records.length - REQUESTS_PER_EXTENSION;
  if (excess <= 0) return 0;
  records.splice(0, excess);
  return excess;
}
