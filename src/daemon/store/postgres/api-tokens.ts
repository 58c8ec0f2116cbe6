import { tooManyTokens, type ApiTokenStore, type StoredApiToken } from '../../auth/api-tokens.js';
import type { Scope } from '../../../contract/requests.js';
import type { Database } from './database.js';

/** One row of `api_tokens`. */
interface ApiTokenRow {
  id: string;
  user_id: string;
  name: string;
  scopes: Scope[];
  workspaces: string[] | null;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  secret_hash: string;
}

const COLUMNS = 'id, user_id, name, scopes, workspaces, created_at, expires_at, last_used_at, secret_hash';

const FIND_BY_HASH = { name: 'api-token-by-hash', text: `SELECT ${COLUMNS} FROM api_tokens WHERE secret_hash = $1` };
/** Two inserts for one user at once count one after the other: each locks the user's row first, then counts in a statement of its own. */
const LOCK_OWNER = 'SELECT 1 FROM users WHERE id = $1 FOR UPDATE';
const INSERT = `INSERT INTO api_tokens (${COLUMNS})
  SELECT $1, $2, $3, $4, $5, $6, $7, NULL, $8
  WHERE (SELECT count(*) FROM api_tokens WHERE user_id = $2) < $9`;

const toStored = (row: ApiTokenRow): StoredApiToken => ({
  id: row.id,
  userId: row.user_id,
  name: row.name,
  scopes: row.scopes,
  workspaces: row.workspaces,
  createdAt: row.created_at.toISOString(),
  expiresAt: row.expires_at.toISOString(),
  lastUsedAt: row.last_used_at?.toISOString() ?? null,
  secretHash: row.secret_hash,
});

/**
 * The `api_tokens` table. Every request with a token reads it by its hash (a
 * unique index), so a revocation on any daemon holds at the next request;
 * a user's tokens go with the user (a foreign key that cascades).
 */
export class PostgresApiTokenStore implements ApiTokenStore {
  constructor(private readonly database: Database) {}

  async insert(token: StoredApiToken, maxPerUser: number): Promise<void> {
    const { rowCount } = await this.database.transaction(async (tx) => {
      await tx.query(LOCK_OWNER, [token.userId]);
      return tx.query(INSERT, [token.id, token.userId, token.name, token.scopes, token.workspaces, token.createdAt, token.expiresAt, token.secretHash, maxPerUser]);
    });
    if (!rowCount) throw tooManyTokens(maxPerUser);
  }

  async findBySecretHash(secretHash: string): Promise<StoredApiToken | undefined> {
    const { rows } = await this.database.query<ApiTokenRow>(FIND_BY_HASH, [secretHash]);
    return rows[0] && toStored(rows[0]);
  }

  async listByUser(userId: string): Promise<StoredApiToken[]> {
    const { rows } = await this.database.query<ApiTokenRow>(`SELECT ${COLUMNS} FROM api_tokens WHERE user_id = $1 ORDER BY created_at, id`, [userId]);
    return rows.map(toStored);
  }

  async listAll(): Promise<StoredApiToken[]> {
    const { rows } = await this.database.query<ApiTokenRow>(`SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at, id`);
    return rows.map(toStored);
  }

  async remove(id: string, userId: string | null): Promise<boolean> {
    const { rowCount } = await this.database.query('DELETE FROM api_tokens WHERE id = $1 AND ($2::text IS NULL OR user_id = $2)', [id, userId]);
    return Boolean(rowCount);
  }

  async recordUses(uses: ReadonlyMap<string, string>): Promise<void> {
    await this.database.query(
      `UPDATE api_tokens SET last_used_at = u.at FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
       WHERE api_tokens.id = u.id AND (last_used_at IS NULL OR last_used_at < u.at)`,
      [[...uses.keys()], [...uses.values()]],
    );
  }

  async removeUser(userId: string): Promise<void> {
    await this.database.query('DELETE FROM api_tokens WHERE user_id = $1', [userId]);
  }

  async close(): Promise<void> {}
}
