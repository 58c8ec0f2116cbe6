--  Extensions' configuration: one row per field.
CREATE TABLE extension_config (
  extension_key text NOT NULL,
  name text NOT NULL,
  -- The field's place among its extension's fields: the order they were first set in.
  position integer NOT NULL,
  type text NOT NULL CHECK (type IN ('STRING', 'NUMBER', 'BOOLEAN', 'SECRET')),
  -- The value as JSON, NULL when unset. A SECRET's is the value sealed with the master key, never the clear text.
  value jsonb,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (extension_key, name)
);
