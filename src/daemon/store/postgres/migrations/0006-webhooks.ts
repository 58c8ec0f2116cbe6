/**
 * The inbound webhook request log. Entries are `json`: a body excerpt may
 * hold U+0000, which PostgreSQL text cannot.
 */
export const sql = `
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
`;
