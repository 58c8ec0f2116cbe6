import type { ExtensionConfigStore, FieldType, FieldValue, StoredField } from '../../extension-config/store.js';
import type { ChangeFeed } from './change-feed.js';
import type { Database, Queryable } from './database.js';

const TOPIC = 'extension-config';
/** First key of the advisory lock a change of one extension's configuration takes. */
const CONFIG_LOCK = 0x636f6e66; // "conf"

interface FieldRow {
  extension_key: string;
  name: string;
  type: FieldType;
  value: FieldValue;
  updated_at: Date;
}

const COLUMNS = 'extension_key, name, type, value, updated_at';

const toField = (row: FieldRow): StoredField => ({ name: row.name, type: row.type, value: row.value, updatedAt: row.updated_at.toISOString() });

/**
 * The `extension_config` table. A change of an extension's configuration
 * reads and rewrites all of its fields under an advisory lock of that
 * extension (a rule across rows, and an extension never configured has no row
 * to lock), so a change made at once on another daemon is neither lost nor
 * made on a stale copy. Other daemons hear of each change by NOTIFY, sent at
 * commit. Values are JSON; a SECRET's is its sealed form.
 */
export class PostgresExtensionConfigStore implements ExtensionConfigStore {
  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
  ) {}

  async loadAll(): Promise<Map<string, StoredField[]>> {
    const { rows } = await this.database.query<FieldRow>(`SELECT ${COLUMNS} FROM extension_config ORDER BY extension_key, position`);
    const all = new Map<string, StoredField[]>();
    for (const row of rows) {
      const fields = all.get(row.extension_key);
      if (fields) fields.push(toField(row));
      else all.set(row.extension_key, [toField(row)]);
    }
    return all;
  }

  fields(extensionKey: string): Promise<StoredField[]> {
    return fieldsOf(this.database, extensionKey);
  }

  update(extensionKey: string, change: (current: readonly StoredField[]) => StoredField[] | null): Promise<StoredField[]> {
    return this.database.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CONFIG_LOCK, extensionKey]);
      // A statement after the lock: it sees every change committed before.
      const current = await fieldsOf(tx, extensionKey);
      const fields = change(current);
      if (!fields) return current;
      await tx.query('DELETE FROM extension_config WHERE extension_key = $1', [extensionKey]);
      await tx.query(
        `INSERT INTO extension_config (extension_key, name, position, type, value, updated_at)
         SELECT $1, field.name, field.position, field.type, field.value::jsonb, field.updated_at
         FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS field (name, type, value, updated_at, position)`,
        [
          extensionKey,
          fields.map((field) => field.name),
          fields.map((field) => field.type),
          fields.map((field) => (field.value === null ? null : JSON.stringify(field.value))),
          fields.map((field) => field.updatedAt),
        ],
      );
      await this.feed.notify(tx, TOPIC, extensionKey);
      return fields;
    });
  }

  onChange(listener: (extensionKey: string | null) => void): void {
    this.feed.subscribe(TOPIC, listener);
  }

  /** Each write commits before it resolves: nothing is left to flush. */
  async close(): Promise<void> {}
}

async function fieldsOf(db: Queryable, extensionKey: string): Promise<StoredField[]> {
  const { rows } = await db.query<FieldRow>(`SELECT ${COLUMNS} FROM extension_config WHERE extension_key = $1 ORDER BY position`, [extensionKey]);
  return rows.map(toField);
}
