import type { RevocationStore } from '../../auth/tokens.js';
import type { Database } from './database.js';

/** The `revoked_tokens` table: read by every authenticated request, so a logout on one daemon holds on all. */
export class PostgresRevocationStore implements RevocationStore {
  constructor(private readonly database: Database) {}

  async isRevoked(jti: string): Promise<boolean> {
    const { rowCount } = await this.database.query('SELECT 1 FROM revoked_tokens WHERE jti = $1', [jti]);
    return (rowCount ?? 0) > 0;
  }

  async revoke(jti: string, expiresAt: number): Promise<void> {
    await this.database.query('INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING', [jti, expiresAt]);
  }

  async pruneExpired(now: number): Promise<number> {
    const { rowCount } = await this.database.query('DELETE FROM revoked_tokens WHERE expires_at <= $1', [now]);
    return rowCount ?? 0;
  }

  async close(): Promise<void> {}
}
