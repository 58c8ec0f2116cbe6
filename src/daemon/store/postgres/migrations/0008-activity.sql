-- The live streams' history, shared by every daemon so that a Last-Event-ID
-- resumes on any of them: the latest 1,000 items (older ones are deleted as
-- new ones come), read by every daemon as they are written.
--
-- Ids are given out from the one row of activity_sequence, under its row lock
-- until the commit: a later id is therefore never visible before an earlier
-- one, so a daemon that read up to id n has missed nothing below n. The row is
-- created by the first write, starting at that time in microseconds, so that
-- a Last-Event-ID from a daemon on files before is older than every id here
-- (and an empty schema stays empty for db import).
CREATE TABLE activity_sequence (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  last_id bigint NOT NULL
);

-- data is the item's JSON as text: it is sent on as it is, never queried.
-- origin is the daemon that wrote it (Database.instanceId): it has the item in
-- memory already and does not read it back. size is data's length, so that
-- reads can be bounded in bytes.
CREATE TABLE activity (
  id bigint PRIMARY KEY,
  origin uuid NOT NULL,
  type text NOT NULL,
  workspace_id text NOT NULL,
  event_key text NOT NULL,
  size integer NOT NULL,
  data text NOT NULL
);
