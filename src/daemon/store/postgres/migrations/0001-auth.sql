-- Users, revoked tokens and login throttling. Times the daemon computes with
-- (token expiry, throttle windows) are plain numbers, as on files; record
-- timestamps are timestamptz.
--
CREATE TABLE users (
  id text PRIMARY KEY,
  -- Listings keep the order of creation, as on files.
  seq bigserial NOT NULL UNIQUE,
  email text NOT NULL,
  -- The e-mail lowercased by the daemon (JavaScript's rules, as on files): one account per address.
  email_key text NOT NULL CONSTRAINT users_email_key UNIQUE,
  full_name text NOT NULL,
  roles text[] NOT NULL,
  active boolean NOT NULL,
  password_hash text NOT NULL,
  token_version integer NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE revoked_tokens (
  jti text PRIMARY KEY,
  -- The token's own expiry, unix seconds: the revocation is pruned after it.
  expires_at bigint NOT NULL
);
CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);

-- One row per login attempt being checked (failed_at null) or failed inside the window.
CREATE TABLE login_attempts (
  id text PRIMARY KEY,
  key text NOT NULL,
  -- Unix milliseconds.
  failed_at bigint,
  -- A check in flight counts until then, so that a daemon killed mid-check does not hold its place for ever.
  reserved_until bigint NOT NULL
);
CREATE INDEX login_attempts_by_key ON login_attempts (key);
