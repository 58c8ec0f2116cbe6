-- Idempotency keys of publishes (`Idempotency-Key`), shared by every daemon.
-- A row per workspace and SHA-256 of the key (fixed size, whatever the key):
-- claimed while a publish holds it (claim_token set, leased until lease_until
-- and renewed by its daemon), kept once published (claim_token null), until
-- expires_at either way. event_id is recorded with the claim, before the
-- event: a claim whose daemon stopped is taken for published exactly when
-- the events table holds that event.
CREATE TABLE idempotency_keys (
  workspace_id text NOT NULL,
  key_digest bytea NOT NULL,
  body_hash bytea NOT NULL,
  event_id uuid NOT NULL,
  claim_token uuid,
  lease_until timestamptz,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, key_digest),
  CHECK ((claim_token IS NULL) = (lease_until IS NULL))
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
-- Lease renewal names the claims a daemon holds; only rows in flight are indexed.
CREATE INDEX idempotency_keys_claims ON idempotency_keys (claim_token) WHERE claim_token IS NOT NULL;
