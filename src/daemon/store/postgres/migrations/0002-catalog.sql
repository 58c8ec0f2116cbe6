--  The marketplace catalog and its audit trail.
CREATE TABLE extensions (
  extension_key text PRIMARY KEY,
  name text NOT NULL,
  description text NOT NULL,
  category text NOT NULL,
  permissions text[] NOT NULL,
  created_by text NOT NULL,
  author_name text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE extension_versions (
  extension_key text NOT NULL REFERENCES extensions,
  version text NOT NULL,
  -- The version without its build metadata: versions of equal precedence reserve each other.
  precedence text NOT NULL,
  release_date text NOT NULL,
  yanked boolean NOT NULL,
  artifact_url text NOT NULL,
  manifest_url text,
  requires_platform text,
  requires_sdk text,
  changelog text,
  published_at timestamptz NOT NULL,
  PRIMARY KEY (extension_key, version),
  CONSTRAINT extension_versions_precedence UNIQUE (extension_key, precedence)
);

CREATE TABLE catalog_audit (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  at timestamptz NOT NULL,
  actor_id text NOT NULL,
  actor_email text NOT NULL,
  action text NOT NULL,
  extension_key text NOT NULL,
  version text,
  reason text,
  -- json, not jsonb: the fields keep the order they were recorded in.
  changes json
);
CREATE INDEX catalog_audit_by_extension ON catalog_audit (extension_key, seq);
