-- Personal API tokens, kept only as the SHA-256 of the token; they go with
-- their user. And each installation's token, likewise only as its hash.
CREATE TABLE api_tokens (
  id text PRIMARY KEY,
  user_id text NOT NULL CONSTRAINT api_tokens_user REFERENCES users ON DELETE CASCADE,
  name text NOT NULL,
  scopes text[] NOT NULL,
  -- NULL: every workspace the user may use.
  workspaces text[],
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  last_used_at timestamptz,
  secret_hash text NOT NULL CONSTRAINT api_tokens_secret_hash UNIQUE
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id, created_at);

ALTER TABLE installations ADD COLUMN token_hash text CONSTRAINT installations_token_hash UNIQUE;
