import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPLAY_WINDOW_MS, type ReplayClaim, type WebhookReplayStore } from '../../webhooks/replays.js';
import type { Database } from './database.js';

/**
 * How long an id in flight stays claimed at most: far longer than a publish
 * takes (its synchronous handlers time out after 30 s), short enough that the
 * ids of a daemon killed mid-publish are processed on the sender's retry.
 */
const CLAIM_MS = 2 * 60 * 1000;
/** How often a call waiting for another daemon's claim of its id looks again. */
const CLAIM_POLL_MS = 100;
/** How often a release the database refused is tried again. */
const RELEASE_RETRY_MS = 1_000;

type Attempt = { claimed: true } | { claimed: false; published: boolean };

/**
 * The `webhook_replays` table, shared by every daemon: a row per id in flight
 * (`claim_id` set, `expires_at` the end of the claim) or published (`claim_id`
 * null, `expires_at` the end of the replay window), keyed by the extension and
 * the SHA-256 of the id (fixed size, whatever the id). An insert decides which
 * call claims an id; it also takes over a row whose time is up. A call whose
 * id is claimed by a call on this daemon waits for it in memory; one claimed
 * on another daemon looks again every CLAIM_POLL_MS until it is published,
 * released, or its claim has lapsed. Times are the daemon's clock (`now`), as
 * on files; daemons are expected to keep their clocks in step (NTP).
 */
export class PostgresWebhookReplayStore implements WebhookReplayStore {
  /** This daemon's attempts and claims in flight, by extension and digest: its concurrent calls with one id wait here. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly database: Database,
    private readonly now: () => number = Date.now,
  ) {}

  async claim(extensionKey: string, messageId: string): Promise<ReplayClaim | null> {
    const digest = createHash('sha256').update(messageId, 'utf8').digest();
    const key = `${extensionKey} ${digest.toString('base64')}`;
    for (;;) {
      const local = this.inFlight.get(key);
      if (local) {
        await local;
        continue;
      }
      let settle!: () => void;
      this.inFlight.set(key, new Promise<void>((resolve) => (settle = resolve)));
      const done = () => {
        this.inFlight.delete(key);
        settle();
      };
      const claimId = randomUUID();
      let attempt: Attempt;
      try {
        attempt = await this.attempt(extensionKey, digest, claimId);
      } catch (error) {
        done();
        throw error;
      }
      if (attempt.claimed) return this.claimed(extensionKey, digest, claimId, done);
      done();
      if (attempt.published) return null;
      await sleep(CLAIM_POLL_MS);
    }
  }

  async prune(): Promise<void> {
    await this.database.query('DELETE FROM webhook_replays WHERE expires_at <= $1', [this.now()]);
  }

  /** Claims the id unless another call holds it or it was published within the window. */
  private async attempt(extensionKey: string, digest: Buffer, claimId: string): Promise<Attempt> {
    const now = this.now();
    const inserted = await this.database.query(
      `INSERT INTO webhook_replays AS r (extension_key, message_digest, claim_id, expires_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (extension_key, message_digest) DO UPDATE SET claim_id = EXCLUDED.claim_id, expires_at = EXCLUDED.expires_at
       WHERE r.expires_at <= $5`,
      [extensionKey, digest, claimId, now + CLAIM_MS, now],
    );
    if (inserted.rowCount) return { claimed: true };
    const { rows } = await this.database.query<{ published: boolean }>(
      'SELECT claim_id IS NULL AS published FROM webhook_replays WHERE extension_key = $1 AND message_digest = $2 AND expires_at > $3',
      [extensionKey, digest, now],
    );
    // Gone meanwhile (released, or its time was up): not published, and worth trying again at once.
    if (!rows[0]) return { claimed: false, published: false };
    return { claimed: false, published: rows[0].published };
  }

  private claimed(extensionKey: string, digest: Buffer, claimId: string, done: () => void): ReplayClaim {
    let open = true;
    const settle = async (write: () => Promise<unknown>) => {
      if (!open) return;
      open = false;
      try {
        await write();
      } finally {
        done();
      }
    };
    return {
      // Published: a duplicate for the window from now, whoever holds the row (a claim that outlived CLAIM_MS may have lost it).
      commit: () =>
        settle(() =>
          this.database.query(
            `INSERT INTO webhook_replays (extension_key, message_digest, claim_id, expires_at) VALUES ($1, $2, NULL, $3)
             ON CONFLICT (extension_key, message_digest) DO UPDATE SET claim_id = NULL, expires_at = EXCLUDED.expires_at`,
            [extensionKey, digest, this.now() + REPLAY_WINDOW_MS],
          ),
        ),
      // Not published: the sender's retry must be processed. A release the database refused is tried
      // again in the background, so that the retry need not wait for the claim to lapse.
      release: () =>
        settle(async () => {
          const release = () =>
            this.database.query('DELETE FROM webhook_replays WHERE extension_key = $1 AND message_digest = $2 AND claim_id = $3', [extensionKey, digest, claimId]);
          try {
            await release();
          } catch (error) {
            this.releaseLater(release);
            throw error;
          }
        }),
    };
  }

  /** Tries `release` every RELEASE_RETRY_MS until it succeeds or the claim would have lapsed anyway. */
  private releaseLater(release: () => Promise<unknown>, tries = CLAIM_MS / RELEASE_RETRY_MS): void {
    if (tries === 0) return;
    const retry = setTimeout(() => void release().catch(() => this.releaseLater(release, tries - 1)), RELEASE_RETRY_MS);
    retry.unref();
  }
}
