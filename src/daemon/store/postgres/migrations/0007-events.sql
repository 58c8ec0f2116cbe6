-- The events domain: the event log, and deliveries as both the outbox and
-- the delivery record (a dead letter is a DEAD delivery). Events and attempts
-- are `json`, not `jsonb`: delivered bodies keep their key order, and a
-- payload or response excerpt may hold U+0000, which jsonb cannot.
--
-- seq numbers the log: pages go newest first by it.
CREATE TABLE events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id text NOT NULL,
  id uuid NOT NULL UNIQUE,
  event_key text NOT NULL,
  occurred_at timestamptz NOT NULL,
  event json NOT NULL
);
CREATE INDEX events_by_workspace ON events (workspace_id, seq DESC);
CREATE INDEX events_by_time ON events (occurred_at);

-- One row per delivery (a replay runs the same delivery again): PENDING rows are the
-- queue, claimed under a lease (lease_owner, lease_until) by one daemon at a time.
CREATE TABLE deliveries (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  id text PRIMARY KEY,
  workspace_id text NOT NULL,
  event_id uuid NOT NULL,
  event_key text NOT NULL,
  subscription_id text,
  extension_key text NOT NULL,
  kind text NOT NULL,
  service_base_url text,
  depth integer NOT NULL,
  status text NOT NULL CHECK (status IN ('PENDING', 'SUCCEEDED', 'DEAD', 'DISCARDED')),
  -- Attempts of this run (a replay starts again from 0), and recorded attempts of every run.
  run_attempts integer NOT NULL DEFAULT 0,
  attempt_count integer NOT NULL DEFAULT 0,
  replay_count integer NOT NULL DEFAULT 0,
  due_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  enqueued_at timestamptz NOT NULL,
  completed_at timestamptz,
  first_attempt_at timestamptz,
  last_error json,
  dead_letter_id uuid UNIQUE,
  dead_at timestamptz,
  lease_owner uuid,
  lease_until timestamptz
);
CREATE INDEX deliveries_due ON deliveries (due_at) WHERE status = 'PENDING';
CREATE INDEX deliveries_by_workspace ON deliveries (workspace_id, seq DESC);
CREATE INDEX deliveries_by_event ON deliveries (event_id);
CREATE INDEX deliveries_dead ON deliveries (dead_at) WHERE status = 'DEAD';

-- Recorded attempts, numbered 1, 2, … per delivery across its runs.
CREATE TABLE delivery_attempts (
  delivery_id text NOT NULL REFERENCES deliveries ON DELETE CASCADE,
  number integer NOT NULL,
  attempt json NOT NULL,
  PRIMARY KEY (delivery_id, number)
);
