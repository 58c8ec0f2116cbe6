import type { PlatformEvent } from '../../../handlers/sdk.js';
import type { UserRecord } from '../../auth/users.js';
import type { AuditRecord } from '../../catalog/types.js';
import type { NumberedRequest } from '../../webhooks/request-log.js';
import type { Queryable } from './database.js';
import type { ImportedDeliveryRow } from './rows.js';

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

/** Oldest first: the log lists them newest first by the order they are inserted in (`seq`). */
export async function insertEvents(tx: Queryable, events: readonly PlatformEvent[]): Promise<void> {
  for (const batch of batches(events)) {
    await tx.query(
      `INSERT INTO events (workspace_id, id, event_key, occurred_at, event)
       SELECT workspace_id, id, event_key, occurred_at, event::json
       FROM unnest($1::text[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[])
         WITH ORDINALITY AS e (workspace_id, id, event_key, occurred_at, event, position)
       ORDER BY position`,
      eventColumns(batch),
    );
  }
}

/** An events batch as the arrays `unnest` takes: workspace, id, key, time, and the event as a publish writes it. */
function eventColumns(batch: readonly PlatformEvent[]): [string[], string[], string[], string[], string[]] {
  return [
    batch.map((event) => event.tenantId),
    batch.map((event) => event.id),
    batch.map((event) => event.eventKey),
    batch.map((event) => event.occurredAt),
    // JSON.stringify escapes U+0000, and the json column keeps the text (and its key order).
    batch.map((event) => JSON.stringify(event)),
  ];
}

/**
 * The events of pending deliveries and dead letters that are not in `events`:
 * files' retention removed them from the log, while the outbox entry or the
 * letter kept its own copy. Inserted oldest first with `seq`s below every
 * other event's, so that they stay their workspace's oldest (listings apply
 * the retention policy, as to any event, and PostgreSQL's retention keeps them
 * while a delivery of them is pending or dead). Call after the log is copied;
 * returns how many were inserted.
 */
export async function insertEventsOfDeliveries(tx: Queryable, events: Iterable<PlatformEvent>): Promise<number> {
  const missing = new Map<string, PlatformEvent>();
  for (const event of events) missing.set(event.id, event);
  for (const batch of batches([...missing.keys()])) {
    const { rows } = await tx.query<{ id: string }>('SELECT id FROM events WHERE id = ANY($1::uuid[])', [batch]);
    for (const { id } of rows) missing.delete(id);
  }
  if (missing.size === 0) return 0;
  const oldestFirst = [...missing.values()].sort((a, b) => Date.parse(a.occurredAt) - Date.parse(b.occurredAt));
  const { rows } = await tx.query<{ lowest: string }>('SELECT coalesce(min(seq), 1) AS lowest FROM events');
  let seq = Number(rows[0]!.lowest) - oldestFirst.length;
  for (const batch of batches(oldestFirst)) {
    await tx.query(
      `INSERT INTO events (seq, workspace_id, id, event_key, occurred_at, event)
       OVERRIDING SYSTEM VALUE
       SELECT seq, workspace_id, id, event_key, occurred_at, event::json
       FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::text[], $5::timestamptz[], $6::text[]) AS e (seq, workspace_id, id, event_key, occurred_at, event)`,
      [batch.map(() => seq++), ...eventColumns(batch)],
    );
  }
  return oldestFirst.length;
}

export interface InsertedDeliveries {
  records: number;
  pending: number;
  dead: number;
  attempts: number;
  /** Rows whose event is not in `events`: nothing could list, claim or replay them. */
  leftOut: number;
}

/**
 * Deliveries under their own `seq`, unleased (any daemon claims the pending
 * ones once due), with their attempts; a delivery whose event is not in
 * `events` is left out. Insert the events first, and call
 * `continueDeliverySequence` after the last.
 */
export async function insertDeliveries(tx: Queryable, rows: readonly ImportedDeliveryRow[]): Promise<InsertedDeliveries> {
  const inserted: InsertedDeliveries = { records: 0, pending: 0, dead: 0, attempts: 0, leftOut: 0 };
  for (const batch of batches(rows)) {
    const { rows: counted } = await tx.query<{ records: number; pending: number; dead: number; attempts: number }>(
      `WITH d AS (
         SELECT * FROM json_to_recordset($1::json) AS d(seq bigint, id text, workspace_id text, event_id uuid, event_key text,
           subscription_id text, extension_key text, kind text, service_base_url text, depth integer, status text, run_attempts integer,
           attempt_count integer, replay_count integer, due_at timestamptz, created_at timestamptz, enqueued_at timestamptz,
           completed_at timestamptz, first_attempt_at timestamptz, last_error text, dead_letter_id uuid, dead_at timestamptz,
           redelivery_of text)
       ), inserted AS (
         INSERT INTO deliveries (seq, id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth,
           status, run_attempts, attempt_count, replay_count, due_at, created_at, enqueued_at, completed_at, first_attempt_at, last_error,
           dead_letter_id, dead_at, redelivery_of)
         OVERRIDING SYSTEM VALUE
         SELECT seq, id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth,
           status, run_attempts, attempt_count, replay_count, due_at, created_at, enqueued_at, completed_at, first_attempt_at, last_error::json,
           dead_letter_id, dead_at, redelivery_of
         FROM d WHERE EXISTS (SELECT 1 FROM events WHERE events.id = d.event_id)
         RETURNING id, status
       ), attempts AS (
         INSERT INTO delivery_attempts (delivery_id, number, attempt)
         SELECT a.delivery_id, a.number, a.attempt::json
         FROM json_to_recordset($2::json) AS a(delivery_id text, number integer, attempt text) JOIN inserted ON inserted.id = a.delivery_id
         RETURNING 1
       )
       SELECT count(*)::int AS records, (count(*) FILTER (WHERE status = 'PENDING'))::int AS pending,
         (count(*) FILTER (WHERE status = 'DEAD'))::int AS dead, (SELECT count(*)::int FROM attempts) AS attempts
       FROM inserted`,
      [
        // json within json_to_recordset is unescaped on the way (U+0000 would fail): nested as strings, cast back.
        JSON.stringify(batch.map(({ attempts: _attempts, last_error, ...row }) => ({ ...row, last_error: last_error === null ? null : JSON.stringify(last_error) }))),
        JSON.stringify(
          batch.flatMap((row) => row.attempts.map(({ number, ...attempt }) => ({ delivery_id: row.id, number, attempt: JSON.stringify(attempt) }))),
        ),
      ],
    );
    const { records, pending, dead, attempts } = counted[0]!;
    inserted.records += records;
    inserted.pending += pending;
    inserted.dead += dead;
    inserted.attempts += attempts;
    inserted.leftOut += batch.length - records;
  }
  return inserted;
}

/** The next delivery a daemon records is numbered after the imported ones. */
export async function continueDeliverySequence(tx: Queryable): Promise<void> {
  await tx.query(`SELECT setval(pg_get_serial_sequence('deliveries', 'seq'), max(seq)) FROM deliveries HAVING count(*) > 0`);
}
