import type { Prepared } from '../database.js';

/**
 * Marks a claim published: the key is kept until its expiry. Names the claim,
 * so that it settles nothing another daemon took over meanwhile.
 * $1 workspace, $2 key digest, $3 claim token.
 */
export const COMMIT_IDEMPOTENCY_CLAIM: Prepared = {
  name: 'commit-idempotency-claim',
  text: `UPDATE idempotency_keys SET claim_token = NULL, lease_until = NULL
         WHERE workspace_id = $1 AND key_digest = $2 AND claim_token = $3`,
};

/**
 * Frees a claim whose publish failed, unless its event was recorded all the
 * same (a connection lost mid-commit): then the key is kept for it.
 * $1 workspace, $2 key digest, $3 claim token.
 */
export const RELEASE_IDEMPOTENCY_CLAIM: Prepared = {
  name: 'release-idempotency-claim',
  text: `WITH recorded AS (
           UPDATE idempotency_keys k SET claim_token = NULL, lease_until = NULL
           WHERE workspace_id = $1 AND key_digest = $2 AND claim_token = $3 AND EXISTS (SELECT 1 FROM events e WHERE e.id = k.event_id)
         )
         DELETE FROM idempotency_keys k
         WHERE workspace_id = $1 AND key_digest = $2 AND claim_token = $3 AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = k.event_id)`,
};

/** Renews the leases of the claims this daemon holds. $1 claim tokens, $2 the lease in ms. */
export const RENEW_IDEMPOTENCY_CLAIMS = `UPDATE idempotency_keys SET lease_until = now() + $2 * interval '1 millisecond' WHERE claim_token = ANY($1::uuid[])`;
