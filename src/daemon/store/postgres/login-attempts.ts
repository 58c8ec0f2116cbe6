import { randomUUID } from 'node:crypto';
import type { LoginAttemptStore, Reservation } from '../../auth/throttle.js';
import type { Database } from './database.js';

/**
 * How long an attempt being checked holds its place at most: far longer than a
 * password check takes, short enough that the places of a daemon killed
 * mid-check come back.
 */
const RESERVATION_MS = 2 * 60 * 1000;
/** First key of the advisory lock that makes counting and reserving one step per throttle key. */
const THROTTLE_LOCK = 0x6c6f6769; // "logi"

/**
 * A throttle key as stored: keys join the e-mail and the address with U+0000,
 * which PostgreSQL text cannot hold; JSON escapes it (and lone surrogates), one
 * key to one text.
 */
const stored = (key: string) => JSON.stringify(key);

/**
 * The `login_attempts` table, shared by every daemon: a row per attempt being
 * checked or failed inside the window. Times are the daemon's clock (`now`), as
 * on files; daemons are expected to keep their clocks in step (NTP).
 */
export class PostgresLoginAttemptStore implements LoginAttemptStore {
  constructor(
    private readonly database: Database,
    private readonly now: () => number = Date.now,
  ) {}

  reserve(key: string, limit: number, windowMs: number): Promise<Reservation> {
    return this.database.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [THROTTLE_LOCK, stored(key)]);
      const now = this.now();
      const { rows } = await tx.query<{ failed_at: string | null }>(
        `SELECT failed_at FROM login_attempts
         WHERE key = $1 AND (failed_at > $2 OR (failed_at IS NULL AND reserved_until > $3))`,
        [stored(key), now - windowMs, now],
      );
      if (rows.length >= limit) {
        // Attempts in flight are counted as failing now.
        const counted = rows.map((row) => (row.failed_at === null ? now : Number(row.failed_at))).sort((a, b) => a - b);
        return { retryAfterMs: counted[counted.length - limit]! + windowMs - now };
      }
      const id = randomUUID();
      await tx.query('INSERT INTO login_attempts (id, key, failed_at, reserved_until) VALUES ($1, $2, NULL, $3)', [
        id,
        stored(key),
        now + RESERVATION_MS,
      ]);
      return { id };
    });
  }

  async failed(key: string, id: string): Promise<void> {
    // Inserted anew if pruning took the reservation meanwhile: the failure counts all the same.
    await this.database.query(
      `INSERT INTO login_attempts (id, key, failed_at, reserved_until) VALUES ($1, $2, $3, $3)
       ON CONFLICT (id) DO UPDATE SET failed_at = EXCLUDED.failed_at`,
      [id, stored(key), this.now()],
    );
  }

  async succeeded(key: string, id: string): Promise<void> {
    await this.database.query('DELETE FROM login_attempts WHERE key = $1 AND (failed_at IS NOT NULL OR id = $2)', [stored(key), id]);
  }

  async abandoned(_key: string, id: string): Promise<void> {
    await this.database.query('DELETE FROM login_attempts WHERE id = $1', [id]);
  }

  async prune(windowMs: number): Promise<void> {
    const now = this.now();
    await this.database.query(
      'DELETE FROM login_attempts WHERE (failed_at IS NOT NULL AND failed_at <= $1) OR (failed_at IS NULL AND reserved_until <= $2)',
      [now - windowMs, now],
    );
  }
}
