import { randomUUID } from 'node:crypto';
import type { ClaimOutcome, ClaimRequest, IdempotencyKeyStore, KeyClaim, KeyRef } from '../../events/idempotency.js';
import { describeFault } from '../../errors.js';
import type { Database } from './database.js';
import { CLAIM_IDEMPOTENCY_KEY } from './sql/claim-idempotency-key.js';
import { DELETE_WORKSPACE_IDEMPOTENCY_KEYS, PRUNE_IDEMPOTENCY_KEYS } from './sql/prune-idempotency-keys.js';
import { READ_IDEMPOTENCY_KEY } from './sql/read-idempotency-key.js';
import { COMMIT_IDEMPOTENCY_CLAIM, RELEASE_IDEMPOTENCY_CLAIM, RENEW_IDEMPOTENCY_CLAIMS } from './sql/settle-idempotency-claim.js';

export interface PostgresIdempotencyOptions {
  /** PLATFORM_DELIVERY_LEASE: how long a claim of a daemon that stopped renewing it blocks its key. */
  leaseMs: number;
  logError: (message: string) => void;
}

interface KeyRow {
  body_hash: Buffer;
  event_id: string;
  claim_token: string | null;
  lapsed: boolean | null;
  expired: boolean;
  published: boolean;
}

/** A key that keeps changing under this request (claimed, released, …) is answered as held, and asked again after a pause. */
const ATTEMPTS = 3;

/**
 * Idempotency keys on PostgreSQL (`idempotency_keys`), shared by every daemon:
 * one statement claims a key (INSERT … ON CONFLICT DO UPDATE … WHERE it is
 * free), so of concurrent requests on any daemons exactly one holds it. A
 * claim is leased, and renewed every third of the lease while its publish
 * runs: a daemon that stops (a crash) blocks its keys for one lease at most;
 * the next request then takes the key over, unless the claim's event was
 * recorded, in which case the key is kept for that event. Times are the
 * database's (now()), so that daemons' clocks need not agree.
 */
export class PostgresIdempotencyKeyStore implements IdempotencyKeyStore {
  /** Tokens of the claims this daemon holds: their leases are renewed until they settle. */
  private readonly held = new Set<string>();
  private readonly renewal: NodeJS.Timeout;

  constructor(
    private readonly database: Database,
    private readonly options: PostgresIdempotencyOptions,
  ) {
    this.renewal = setInterval(() => void this.renew(), Math.max(100, options.leaseMs / 3));
    this.renewal.unref();
  }

  async claim({ workspaceId, keyDigest }: KeyRef, { bodyHash, eventId, ttlMs }: ClaimRequest): Promise<ClaimOutcome> {
    const token = randomUUID();
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      const claimed = await this.database.query(CLAIM_IDEMPOTENCY_KEY, [workspaceId, keyDigest, bodyHash, eventId, token, this.options.leaseMs, ttlMs]);
      if (claimed.rowCount) {
        this.held.add(token);
        return { kind: 'claimed', claim: this.claimOf(workspaceId, keyDigest, token) };
      }
      const { rows } = await this.database.query<KeyRow>(READ_IDEMPOTENCY_KEY, [workspaceId, keyDigest]);
      const row = rows[0];
      // Gone since (released, pruned), or its time just ran out: it may be free now.
      if (!row || (row.expired && (row.claim_token === null || row.lapsed))) continue;
      const kept = { kind: 'kept', kept: { bodyHash: row.body_hash, eventId: row.event_id } } as const;
      if (row.claim_token === null) return kept;
      if (row.lapsed && row.published) {
        // Its daemon stopped after recording the event: the key is that event's.
        await this.database.query(COMMIT_IDEMPOTENCY_CLAIM, [workspaceId, keyDigest, row.claim_token]);
        return kept;
      }
      if (!row.lapsed) return { kind: 'held' };
    }
    return { kind: 'held' };
  }

  async prune(): Promise<number> {
    return (await this.database.query(PRUNE_IDEMPOTENCY_KEYS)).rowCount ?? 0;
  }

  async forgetWorkspace(workspaceId: string): Promise<void> {
    await this.database.query(DELETE_WORKSPACE_IDEMPOTENCY_KEYS, [workspaceId]);
  }

  close(): void {
    clearInterval(this.renewal);
  }

  private claimOf(workspaceId: string, keyDigest: Buffer, token: string): KeyClaim {
    let settled = false;
    const settle = async (statement: typeof COMMIT_IDEMPOTENCY_CLAIM): Promise<number> => {
      if (settled) return 1;
      settled = true;
      // Renewed no more: should the statement fail, the lease lapses and the next request settles the key from the events table.
      this.held.delete(token);
      return (await this.database.query(statement, [workspaceId, keyDigest, token])).rowCount ?? 0;
    };
    return {
      commit: async () => {
        if ((await settle(COMMIT_IDEMPOTENCY_CLAIM)) === 0) {
          this.options.logError('an idempotency key was taken over by another daemon while this one published its event (it stalled past its lease): both may have published');
        }
      },
      release: async () => {
        await settle(RELEASE_IDEMPOTENCY_CLAIM);
      },
    };
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    try {
      await this.database.query(RENEW_IDEMPOTENCY_CLAIMS, [[...this.held], this.options.leaseMs]);
    } catch (error) {
      this.options.logError(`could not renew the leases of idempotency keys: ${describeFault(error)}`);
    }
  }
}
