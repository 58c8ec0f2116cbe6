-- The inbound webhook request log and the replay check. Request log entries
-- are `json`: a body excerpt may hold U+0000, which PostgreSQL text cannot.
-- Times the daemon computes with (replay windows, claims) are unix
-- milliseconds, as on files.
--
-- The number of each extension's latest call: calls are numbered 1, 2, … per extension.
CREATE TABLE webhook_request_numbers (
  extension_key text PRIMARY KEY,
  last_seq bigint NOT NULL
);

CREATE TABLE webhook_requests (
  extension_key text NOT NULL,
  seq bigint NOT NULL,
  entry json NOT NULL,
  PRIMARY KEY (extension_key, seq)
);

-- Provider delivery ids, as the SHA-256 of the id: in flight (claim_id set) until the claim
-- lapses, or published (claim_id null) until the replay window ends; either way until expires_at.
CREATE TABLE webhook_replays (
  extension_key text NOT NULL,
  message_digest bytea NOT NULL,
  claim_id uuid,
  expires_at bigint NOT NULL,
  PRIMARY KEY (extension_key, message_digest)
);
CREATE INDEX webhook_replays_by_expiry ON webhook_replays (expires_at);
