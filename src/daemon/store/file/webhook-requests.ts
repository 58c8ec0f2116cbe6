import { join } from 'node:path';
import { describeFault } from '../../errors.js';
import {
  REQUESTS_PER_EXTENSION,
  type NumberedRequest,
  type RequestWindow,
  type WebhookRequestEntry,
  type WebhookRequestStore,
} from '../../webhooks/request-log.js';
import { AppendLog } from '../append-log.js';

/** One line of webhook-requests.log. */
interface RequestRecord extends NumberedRequest {
  extensionKey: string;
}

/**
 * The inbound webhook calls of every extension, as an append-only log
 * (webhook-requests.log) replayed into memory at start, compacted like the
 * chat log: once it holds twice the lines the extensions keep, it is
 * rewritten to what they keep. Entries are diagnostics: kept in memory at
 * once, and appended lazily (group commit), never waited for.
 */
export class FileWebhookRequestStore implements WebhookRequestStore {
  private compacting: Promise<void> | null = null;
  private lastWriteError: unknown = null;

  private constructor(
    private readonly log: AppendLog<RequestRecord>,
    private readonly extensions: Map<string, RequestRecord[]>,
    private lines: number,
    private retained: number,
    private readonly logError: (message: string) => void,
  ) {}

  static async open(dataDir: string, logError: (message: string) => void): Promise<FileWebhookRequestStore> {
    const extensions = new Map<string, RequestRecord[]>();
    let lines = 0;
    let retained = 0;
    const log = await AppendLog.open<RequestRecord>(join(dataDir, 'webhook-requests.log'), (record) => {
      lines += 1;
      retained += 1 - keep(extensions, record);
    });
    return new FileWebhookRequestStore(log, extensions, lines, retained, logError);
  }

  /** In memory at once; on disk within a group commit. */
  async record(extensionKey: string, entry: WebhookRequestEntry): Promise<void> {
    const seq = (this.extensions.get(extensionKey)?.at(-1)?.seq ?? 0) + 1;
    const record: RequestRecord = { extensionKey, seq, entry };
    this.retained += 1 - keep(this.extensions, record);
    this.lines += 1;
    this.log.appendLazily(record, (error) => {
      // One failed group rejects each of its records with the same error: report it once.
      if (error !== this.lastWriteError) this.report(error);
      this.lastWriteError = error;
    });
    this.compactIfWorthIt();
  }

  async keptRange(extensionKey: string): Promise<{ oldest: number; newest: number } | null> {
    const records = this.extensions.get(extensionKey);
    return records?.length ? { oldest: records[0]!.seq, newest: records.at(-1)!.seq } : null;
  }

  async newestFirst(extensionKey: string, window: RequestWindow, limit: number): Promise<NumberedRequest[]> {
    const records = this.extensions.get(extensionKey) ?? [];
    const found: NumberedRequest[] = [];
    // Kept numbers are consecutive, so the newest one wanted is found by arithmetic.
    const newestKept = records.at(-1)?.seq ?? 0;
    for (let index = records.length - 1 - Math.max(0, newestKept - (window.before - 1)); index >= 0 && found.length < limit; index -= 1) {
      const { seq, entry } = records[index]!;
      if (seq < window.floor) break;
      found.push({ seq, entry });
    }
    return found;
  }

  async close(): Promise<void> {
    if (this.compacting) await this.compacting;
    await this.log.close();
  }

  private report(error: unknown): void {
    this.logError(`webhook request log: ${describeFault(error)}`);
  }

  private compactIfWorthIt(): void {
    if (this.compacting || this.lines < 2 * this.retained + REQUESTS_PER_EXTENSION) return;
    const records = [...this.extensions.values()].flat();
    this.compacting = this.log
      .rewrite(records)
      .then(() => {
        this.lines = records.length;
      })
      .catch((error: unknown) => this.report(error))
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
