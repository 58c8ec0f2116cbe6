/** Keys past their lifetime, but not a claim still leased (a publish in flight). */
export const PRUNE_IDEMPOTENCY_KEYS = 'DELETE FROM idempotency_keys WHERE expires_at <= now() AND (claim_token IS NULL OR lease_until <= now())';

/** A deleted workspace's keys, which would name events deleted with it. $1 workspace. */
export const DELETE_WORKSPACE_IDEMPOTENCY_KEYS = 'DELETE FROM idempotency_keys WHERE workspace_id = $1';
