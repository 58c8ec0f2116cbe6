import { describeFault } from '../../errors.js';
import {
  REQUESTS_PER_EXTENSION,
  type NumberedRequest,
  type RequestWindow,
  type WebhookRequestEntry,
  type WebhookRequestStore,
} from '../../webhooks/request-log.js';
import type { Database } from './database.js';

/**
 * The `webhook_requests` table. Recording is one statement: it numbers the
 * call by bumping its extension's row in `webhook_request_numbers` (calls of
 * one extension wait for each other there, on any daemon, so numbers commit
 * in order and without gaps), stores it, and deletes what fell out of the
 * extension's latest REQUESTS_PER_EXTENSION: the table never holds more.
 */
export class PostgresWebhookRequestStore implements WebhookRequestStore {
  constructor(
    private readonly database: Database,
    private readonly logError: (message: string) => void,
  ) {}

  /** Committed when it resolves, so that the next read on any daemon lists it. */
  async record(extensionKey: string, entry: WebhookRequestEntry): Promise<void> {
    try {
      await this.database.query(
        `WITH numbered AS (
           INSERT INTO webhook_request_numbers AS n (extension_key, last_seq) VALUES ($1::text, 1)
           ON CONFLICT (extension_key) DO UPDATE SET last_seq = n.last_seq + 1
           RETURNING last_seq
         ), stored AS (
           INSERT INTO webhook_requests (extension_key, seq, entry) SELECT $1, last_seq, $2::json FROM numbered
         )
         DELETE FROM webhook_requests WHERE extension_key = $1 AND seq <= (SELECT last_seq FROM numbered) - $3`,
        [extensionKey, entry, REQUESTS_PER_EXTENSION],
      );
    } catch (error) {
      this.report(error);
    }
  }

  async keptRange(extensionKey: string): Promise<{ oldest: number; newest: number } | null> {
    const { rows } = await this.database.query<{ oldest: string | null; newest: string | null }>(
      'SELECT min(seq) AS oldest, max(seq) AS newest FROM webhook_requests WHERE extension_key = $1',
      [extensionKey],
    );
    const { oldest, newest } = rows[0]!;
    return oldest === null || newest === null ? null : { oldest: Number(oldest), newest: Number(newest) };
  }

  async newestFirst(extensionKey: string, window: RequestWindow, limit: number): Promise<NumberedRequest[]> {
    const { rows } = await this.database.query<{ seq: string; entry: WebhookRequestEntry }>(
      `SELECT seq, entry FROM webhook_requests WHERE extension_key = $1 AND seq < $2 AND seq >= $3 ORDER BY seq DESC LIMIT $4`,
      [extensionKey, window.before, window.floor, limit],
    );
    return rows.map((row) => ({ seq: Number(row.seq), entry: row.entry }));
  }

  private report(error: unknown): void {
    this.logError(`webhook request log: ${describeFault(error)}`);
  }

  /** Each entry commits before `record` resolves: nothing is left to flush. */
  async close(): Promise<void> {}
}
