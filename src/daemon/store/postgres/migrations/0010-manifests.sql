-- Extension manifests: a version's manifest (immutable with it), the
-- permissions an ADMIN granted at install, and the path below the service
-- URL where a subscription a manifest declared delivers (null: /events).
-- json, not jsonb: a manifest is answered as it was published, its keys in their order.
ALTER TABLE extension_versions ADD COLUMN manifest json;
ALTER TABLE installations ADD COLUMN granted_permissions text[] NOT NULL DEFAULT '{}';
ALTER TABLE subscriptions ADD COLUMN delivery_path text;
