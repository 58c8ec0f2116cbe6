import type { UserRecord } from '../../auth/users.js';
import type { AuditRecord } from '../../catalog/types.js';
import type { NumberedRequest } from '../../webhooks/request-log.js';
import type { Queryable } from './database.js';

/**
 * Rows for `platform db import` that the stores' interfaces cannot write as
 * they were: a new user gets a new id and timestamps, a new extension its one
 * creation record, a webhook call the next number. These keep ids, timestamps
 * and numbers as the data directory has them. Tables and columns are those of
 * the migrations; rows go in the order given, which is the order listings
 * follow (their `seq` columns).
 */

/** Rows per statement for the long tables. */
const BATCH = 1_000;

function* batches<T>(items: readonly T[]): Iterable<T[]> {
  for (let start = 0; start < items.length; start += BATCH) yield items.slice(start, start + BATCH);
}

export async function insertUsers(tx: Queryable, users: readonly UserRecord[]): Promise<void> {
  for (const user of users) {
    await tx.query(
      `INSERT INTO users (id, email, email_key, full_name, roles, active, password_hash, token_version, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        user.id,
        user.email,
        user.email.toLowerCase(),
        user.fullName,
        user.roles,
        user.active,
        user.passwordHash,
        user.tokenVersion,
        user.createdAt,
        user.updatedAt,
      ],
    );
  }
}

/** Oldest first: the trail lists them newest first by the order they are inserted in. */
export async function insertAuditRecords(tx: Queryable, records: readonly AuditRecord[]): Promise<void> {
  for (const batch of batches(records)) {
    await tx.query(
      `INSERT INTO catalog_audit (id, at, actor_id, actor_email, action, extension_key, version, reason, changes)
       SELECT id, at, actor_id, actor_email, action, extension_key, version, reason, changes::json
       FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
         WITH ORDINALITY AS r (id, at, actor_id, actor_email, action, extension_key, version, reason, changes, position)
       ORDER BY position`,
      [
        batch.map((record) => record.id),
        batch.map((record) => record.at),
        batch.map((record) => record.actor.id),
        batch.map((record) => record.actor.email),
        batch.map((record) => record.action),
        batch.map((record) => record.extensionKey),
        batch.map((record) => record.version ?? null),
        batch.map((record) => record.reason ?? null),
        // JSON text keeps the fields' order (the column is json, not jsonb).
        batch.map((record) => (record.changes === undefined ? null : JSON.stringify(record.changes))),
      ],
    );
  }
}

/**
 * An extension's kept calls, oldest first, under their numbers; the next call
 * is numbered after the newest, as on files.
 */
export async function insertWebhookRequests(tx: Queryable, extensionKey: string, calls: readonly NumberedRequest[]): Promise<void> {
  if (calls.length === 0) return;
  await tx.query('INSERT INTO webhook_request_numbers (extension_key, last_seq) VALUES ($1, $2)', [extensionKey, calls.at(-1)!.seq]);
  for (const batch of batches(calls)) {
    await tx.query(
      // JSON.stringify escapes what PostgreSQL text cannot hold (U+0000), and the json column keeps that text as it is.
      `INSERT INTO webhook_requests (extension_key, seq, entry) SELECT $1, seq, entry::json FROM unnest($2::bigint[], $3::text[]) AS c (seq, entry)`,
      [extensionKey, batch.map((call) => call.seq), batch.map((call) => JSON.stringify(call.entry))],
    );
  }
}
