import { randomUUID } from 'node:crypto';
import { emailTaken, isActiveAdmin, lastActiveAdmin, type NewUser, type UserRecord, type UserStore } from '../../auth/users.js';
import type { Role } from '../../../contract/resources.js';
import { notFound } from '../../errors.js';
import type { ChangeFeed } from './change-feed.js';
import { BatchedRead } from './batched-read.js';
import { isUniqueViolation, type Database, type Queryable } from './database.js';

interface UserRow {
  id: string;
  email: string;
  full_name: string;
  roles: Role[];
  active: boolean;
  password_hash: string;
  token_version: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, email, full_name, roles, active, password_hash, token_version, created_at, updated_at';
/** Every authenticated request reads its user. */
const USERS_BY_ID = { name: 'users-by-id', text: `SELECT ${COLUMNS} FROM users WHERE id = ANY($1::text[])` };
const TOPIC = 'users';
/** First key of the advisory lock every change that takes away an active ADMIN waits for. */
const ADMINS_LOCK = 0x75736572; // "user"

const toRecord = (row: UserRow): UserRecord => ({
  id: row.id,
  email: row.email,
  fullName: row.full_name,
  roles: row.roles,
  active: row.active,
  passwordHash: row.password_hash,
  tokenVersion: row.token_version,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/**
 * The `users` table. One account per e-mail is its unique constraint on the
 * lowercased address. The last-ADMIN rule needs more than a constraint: every
 * change that takes an active ADMIN away locks that user's row, then waits for
 * one advisory lock and counts the other active ADMINs, so two daemons demoting
 * the last two ADMINs at once cannot both succeed (the second one counts after
 * the first committed).
 */
export class PostgresUserStore implements UserStore {
  private readonly byId: BatchedRead<string, UserRecord>;

  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
  ) {
    this.byId = new BatchedRead(
      (id) => id,
      async (ids) => {
        const { rows } = await this.database.query<UserRow>(USERS_BY_ID, [ids]);
        return new Map(rows.map((row) => [row.id, toRecord(row)]));
      },
    );
  }

  async count(): Promise<number> {
    const { rows } = await this.database.query<{ count: number }>('SELECT count(*)::int AS count FROM users');
    return rows[0]!.count;
  }

  get(id: string): Promise<UserRecord | undefined> {
    return this.byId.read(id);
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    const { rows } = await this.database.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE email_key = $1`, [email.toLowerCase()]);
    return rows[0] && toRecord(rows[0]);
  }

  async list(): Promise<UserRecord[]> {
    const { rows } = await this.database.query<UserRow>(`SELECT ${COLUMNS} FROM users ORDER BY seq`);
    return rows.map(toRecord);
  }

  async insert(input: NewUser): Promise<UserRecord> {
    const now = new Date();
    const user: UserRecord = {
      id: randomUUID(),
      ...input,
      active: true,
      tokenVersion: 0,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    try {
      await this.database.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO users (id, email, email_key, full_name, roles, active, password_hash, token_version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
          [user.id, user.email, user.email.toLowerCase(), user.fullName, user.roles, user.active, user.passwordHash, user.tokenVersion, now],
        );
        await this.feed.notify(tx, TOPIC, user.id);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key')) throw emailTaken(input.email);
      throw error;
    }
    return user;
  }

  modify(id: string, change: (user: UserRecord) => void): Promise<UserRecord> {
    return this.database.transaction(async (tx) => {
      const current = await this.lockUser(tx, id);
      const next = structuredClone(current);
      change(next);
      if (isActiveAdmin(current) && !isActiveAdmin(next)) await this.assertAnotherActiveAdmin(tx, id);
      const updatedAt = new Date();
      next.updatedAt = updatedAt.toISOString();
      await tx.query(
        `UPDATE users SET full_name = $2, roles = $3, active = $4, password_hash = $5, token_version = $6, updated_at = $7
         WHERE id = $1`,
        [id, next.fullName, next.roles, next.active, next.passwordHash, next.tokenVersion, updatedAt],
      );
      await this.feed.notify(tx, TOPIC, id);
      return next;
    });
  }

  async remove(id: string): Promise<void> {
    await this.database.transaction(async (tx) => {
      const current = await this.lockUser(tx, id);
      if (isActiveAdmin(current)) await this.assertAnotherActiveAdmin(tx, id);
      await tx.query('DELETE FROM users WHERE id = $1', [id]);
      await this.feed.notify(tx, TOPIC, id);
    });
  }

  onChange(listener: (id: string | null) => void): void {
    this.feed.subscribe(TOPIC, listener);
  }

  /** Each write commits before it resolves: nothing is left to flush. */
  async close(): Promise<void> {}

  private async lockUser(tx: Queryable, id: string): Promise<UserRecord> {
    const { rows } = await tx.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE id = $1 FOR UPDATE`, [id]);
    if (!rows[0]) throw notFound(`user ${id} not found`);
    return toRecord(rows[0]);
  }

  /** Counted under the lock, in a statement of its own: it sees every such change committed before. */
  private async assertAnotherActiveAdmin(tx: Queryable, exceptId: string): Promise<void> {
    await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ADMINS_LOCK, 'active-admins']);
    const { rows } = await tx.query<{ others: number }>(
      `SELECT count(*)::int AS others FROM users WHERE id <> $1 AND active AND 'ADMIN' = ANY (roles)`,
      [exceptId],
    );
    if (rows[0]!.others === 0) throw lastActiveAdmin();
  }
}
