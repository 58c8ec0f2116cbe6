-- Workspaces, their members, installed extensions and event subscriptions.
-- Deleting a workspace takes everything of it along (ON DELETE CASCADE); a
-- deleted user leaves every workspace the same way. Sealed columns hold what
-- the master key sealed, never the clear value.
--
CREATE TABLE workspaces (
  id text PRIMARY KEY,
  -- Listings keep the order of creation, as on files.
  seq bigserial NOT NULL UNIQUE,
  name text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE workspace_members (
  workspace_id text NOT NULL CONSTRAINT workspace_members_workspace REFERENCES workspaces ON DELETE CASCADE,
  user_id text NOT NULL CONSTRAINT workspace_members_user REFERENCES users ON DELETE CASCADE,
  -- Members are listed in the order they were added.
  seq bigserial NOT NULL,
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_by_user ON workspace_members (user_id);

CREATE TABLE installations (
  workspace_id text NOT NULL CONSTRAINT installations_workspace REFERENCES workspaces ON DELETE CASCADE,
  extension_key text NOT NULL,
  seq bigserial NOT NULL,
  version text NOT NULL,
  enabled boolean NOT NULL,
  installed_at timestamptz NOT NULL,
  -- One installation of an extension per workspace.
  CONSTRAINT installations_pkey PRIMARY KEY (workspace_id, extension_key)
);

CREATE TABLE subscriptions (
  id text PRIMARY KEY,
  seq bigserial NOT NULL UNIQUE,
  workspace_id text NOT NULL CONSTRAINT subscriptions_workspace REFERENCES workspaces ON DELETE CASCADE,
  event_key text NOT NULL,
  extension_key text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('EXTERNAL_SERVICE', 'IN_PROCESS')),
  -- With its credentials masked; the whole URL is sealed when it has credentials.
  service_base_url text,
  sealed_service_base_url text,
  sealed_signing_secret text NOT NULL,
  sealed_previous_signing_secret text,
  -- Unix milliseconds, as the dispatcher computes with them.
  previous_secret_until bigint,
  enabled boolean NOT NULL,
  disabled_reason text,
  failing_since bigint,
  created_at timestamptz NOT NULL
);
-- Publishing looks subscriptions up by (workspace, event key).
CREATE INDEX subscriptions_by_topic ON subscriptions (workspace_id, event_key);
