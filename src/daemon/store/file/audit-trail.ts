import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { MAX_AUDIT_PAGE } from '../../../contract/requests.js';
import type { AuditFilter } from '../../catalog/store.js';
import type { AuditRecord } from '../../catalog/types.js';
import { AppendLog } from '../append-log.js';

/**
 * The audit trail: every catalog change, one JSON line each in audit.log,
 * which grows without bound. Memory holds only the most recent `window`
 * records; a read they cannot answer (a filter whose matches are older) streams
 * the file, keeping at most twice `limit` records at a time.
 */
export class AuditTrail {
  /** The tail of the file, oldest first; between `window` and 2 × `window` records once the file is that long. */
  private recent: AuditRecord[] = [];
  private total = 0;

  private constructor(
    private readonly log: AppendLog<AuditRecord>,
    private readonly window: number,
  ) {}

  /** The default window holds the largest page, so an unfiltered read never touches the file. */
  static async open(file: string, window = MAX_AUDIT_PAGE): Promise<AuditTrail> {
    const replayed: AuditRecord[] = [];
    let total = 0;
    const log = await AppendLog.open<AuditRecord>(file, (record) => {
      total += 1;
      replayed.push(record);
      if (replayed.length > 2 * window) replayed.splice(0, replayed.length - window);
    });
    const trail = new AuditTrail(log, window);
    trail.recent = replayed;
    trail.total = total;
    return trail;
  }

  /** Resolves once the record is on disk. */
  async append(record: AuditRecord): Promise<void> {
    await this.log.append(record);
    this.total += 1;
    this.recent.push(record);
    if (this.recent.length > 2 * this.window) this.recent.splice(0, this.recent.length - this.window);
  }

  /** Newest first. */
  async read(filter: AuditFilter): Promise<AuditRecord[]> {
    const matches = (record: AuditRecord) =>
      (filter.extensionKey === undefined || record.extensionKey === filter.extensionKey) &&
      (filter.version === undefined || record.version === filter.version) &&
      (filter.action === undefined || record.action === filter.action);
    const offset = filter.offset ?? 0;
    const wanted = offset + filter.limit;
    const found: AuditRecord[] = [];
    for (let i = this.recent.length - 1; i >= 0 && found.length < wanted; i -= 1) {
      if (matches(this.recent[i]!)) found.push(this.recent[i]!);
    }
    if (found.length === wanted || this.recent.length === this.total) return found.slice(offset);
    return (await this.scan(matches, wanted)).slice(offset);
  }

  close(): Promise<void> {
    return this.log.close();
  }

  /** The last `limit` matching records of the file, newest first. Reads only what was durably appended. */
  private async scan(matches: (record: AuditRecord) => boolean, limit: number): Promise<AuditRecord[]> {
    const size = this.log.byteSize;
    let kept: AuditRecord[] = [];
    const lines = createInterface({ input: createReadStream(this.log.file, { end: size - 1 }), crlfDelay: Infinity });
    for await (const line of lines) {
      if (line.length === 0) continue;
      const record = JSON.parse(line) as AuditRecord;
      if (!matches(record)) continue;
      kept.push(record);
      if (kept.length > 2 * limit) kept = kept.slice(-limit);
    }
    return kept.slice(-limit).reverse();
  }
}
