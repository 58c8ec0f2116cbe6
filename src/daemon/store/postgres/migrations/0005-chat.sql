-- Chat channels and their messages. A channel's name is kept as JSON text:
-- PostgreSQL text cannot hold U+0000, which a notification's payload may
-- carry, and JSON text keeps every string exactly. Messages are `json` for the
-- same reason.
--
CREATE TABLE chat_channels (
  workspace_id text NOT NULL,
  channel_name text NOT NULL,
  -- The number of the channel's latest message: messages are numbered 1, 2, … per channel.
  last_seq bigint NOT NULL,
  last_posted_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, channel_name)
);

CREATE TABLE chat_messages (
  workspace_id text NOT NULL,
  channel_name text NOT NULL,
  seq bigint NOT NULL,
  message json NOT NULL,
  PRIMARY KEY (workspace_id, channel_name, seq)
);
