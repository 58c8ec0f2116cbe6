import type { RevocationStore } from '../../auth/tokens.js';
import { BatchedRead } from './batched-read.js';
import type { Database } from './database.js';

const REVOKED = { name: 'revoked-tokens', text: 'SELECT jti FROM revoked_tokens WHERE jti = ANY($1::text[])' };

/** The `revoked_tokens` table: read by every authenticated request, so a logout on one daemon holds on all. */
export class PostgresRevocationStore implements RevocationStore {
  private readonly revoked: BatchedRead<string, true>;

  constructor(private readonly database: Database) {
    this.revoked = new BatchedRead(
      (jti) => jti,
      async (jtis) => {
        const { rows } = await this.database.query<{ jti: string }>(REVOKED, [jtis]);
        return new Map(rows.map((row) => [row.jti, true]));
      },
    );
  }

  async isRevoked(jti: string): Promise<boolean> {
    return (await this.revoked.read(jti)) === true;
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
