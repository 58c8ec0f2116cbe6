import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { invalid, unavailable } from '../../errors.js';
import type { DatabaseSettings } from '../../database-settings.js';

/** How long getting a connection may take (a new one, or a free one from the pool) before the request is answered 503. */
const CONNECT_TIMEOUT_MS = 5_000;
/** Waits before each question about a transaction whose COMMIT lost its connection (see committedAfterAll). */
const OUTCOME_WAITS_MS = [0, 50, 250, 1_000];

/**
 * A statement of the hot paths (every request or every delivery), which each
 * connection parses and plans once under its name instead of on every run.
 * Its text never changes and names its columns (no `*`): a prepared statement
 * whose result columns changed under it (a newer daemon's migration) fails.
 */
export interface Prepared {
  name: string;
  text: string;
}

/** What both the pool and a transaction's client answer: parameterised SQL only. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string | Prepared, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** A schema name as written in SQL; settings only hold names that need no escaping (see config.ts). */
export const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The columns of a list, each prefixed with a table's alias. */
export const qualified = (columns: string, alias: string) =>
  columns
    .split(',')
    .map((column) => `${alias}.${column.trim()}`)
    .join(', ');

/**
 * A pg.Pool bound to the platform's schema: every connection starts with the
 * schema as its search_path, so that the SQL of stores and migrations names
 * tables without it. Failures to reach the database become 503 UNAVAILABLE.
 */
export class Database implements Queryable {
  /** Names this process in the notifications it sends, so that it can ignore its own. */
  readonly instanceId = randomUUID();
  private readonly pool: pg.Pool;

  constructor(
    readonly settings: DatabaseSettings,
    /** An idle connection failed (the server restarted): the pool drops it and connects anew when needed. */
    onIdleError: (error: Error) => void,
  ) {
    const searchPath = `SET search_path TO ${quoteIdentifier(settings.schema)}`;
    this.pool = new pg.Pool({
      connectionString: settings.url,
      application_name: 'platform',
      // A database that does not answer (a host gone, a proxy half-open) becomes a 503 after this, not a request left hanging.
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      onConnect: async (client) => {
        await client.query(searchPath);
      },
    });
    this.pool.on('error', onIdleError);
  }

  get schema(): string {
    return this.settings.schema;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string | Prepared, values?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw asDatabaseError(error);
    }
  }

  /**
   * Runs `work` in one transaction on one connection: committed when it
   * resolves, rolled back when it throws (its error rethrown).
   *
   * A connection lost while COMMIT was under way leaves the outcome unknown
   * to this side: the transaction may have committed with only its answer
   * lost. It is asked for by the transaction's id on another connection, so
   * that a change that was made is answered as made and an error means that
   * nothing changed (see committedAfterAll).
   */
  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw asDatabaseError(error);
    }
    let broken: unknown = null;
    // A checked-out client whose connection is lost also emits 'error', which with no listener
    // would end the process; the statement in flight, or the next one, fails with it anyway.
    const lost = (error: Error) => (broken = error);
    client.on('error', lost);
    let xid: string | null = null;
    try {
      // One round trip: the id is what the outcome of a lost COMMIT is asked by.
      const begun = (await client.query('BEGIN; SELECT txid_current()::text AS xid')) as unknown as pg.QueryResult[];
      xid = (begun[1]!.rows[0] as { xid: string }).xid;
      const result = await work(client);
      try {
        await client.query('COMMIT');
      } catch (error) {
        const mapped = asDatabaseError(error);
        if ((mapped as { code?: unknown }).code !== 'UNAVAILABLE') throw error;
        broken = error;
        if (await this.committedAfterAll(xid)) return result;
        throw error;
      }
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackFailed) {
        // The connection itself is gone: the server rolls back on its side.
        broken = rollbackFailed;
      }
      throw asDatabaseError(error);
    } finally {
      client.off('error', lost);
      client.release(broken instanceof Error ? broken : undefined);
    }
  }

  /**
   * Whether the transaction `xid` committed, asked on a fresh connection after
   * its own was lost during COMMIT: a few times while the database is out of
   * reach or the server has not yet ended it. When no answer comes, the
   * failure stands with a message that says the change may have been made.
   */
  private async committedAfterAll(xid: string): Promise<boolean> {
    for (const wait of OUTCOME_WAITS_MS) {
      await sleep(wait);
      try {
        const { rows } = await this.pool.query<{ status: string | null }>('SELECT txid_status($1::bigint) AS status', [xid]);
        const status = rows[0]?.status;
        if (status === 'committed') return true;
        if (status !== 'in progress') return false;
      } catch {
        // Still away: ask again.
      }
    }
    throw unavailable('the database was lost while a change was being committed; it may have been made: read it back before trying again');
  }

  /** A connection of its own, outside the pool, for LISTEN. */
  dedicatedClient(): pg.Client {
    return new pg.Client({ connectionString: this.settings.url, application_name: 'platform' });
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/** SQLSTATE classes of a database that cannot serve now: connection exceptions, insufficient resources, operator intervention. */
const UNAVAILABLE_CLASSES = ['08', '53', '57'];
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE']);

/**
 * A lost or refused connection is 503 UNAVAILABLE, as a full disk is on files.
 * Text holding U+0000, which PostgreSQL text cannot store or compare (22021),
 * is the client's error (400), not a fault. Other errors pass through.
 */
export function asDatabaseError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '22021') {
    const mapped = invalid('', 'text may not contain the character U+0000');
    mapped.cause = error;
    return mapped;
  }
  const message = error instanceof Error ? error.message : '';
  const lost =
    (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_CLASSES.includes(code.slice(0, 2)))) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
  if (!lost) return error;
  const mapped = unavailable('the database cannot be reached; nothing was changed');
  mapped.cause = error;
  return mapped;
}

/**
 * Whether a statement failed because its connection was lost after it was
 * established: the statement may have reached the server, and run. (A
 * connection refused or never made means it did not.)
 */
export function lostMidStatement(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | null)?.cause ?? error;
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : '';
  return code === 'ECONNRESET' || code === 'EPIPE' || /Connection terminated/i.test(message);
}

/** A unique constraint refused the row (SQLSTATE 23505); `constraint` names which one. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const failure = error as { code?: unknown; constraint?: unknown } | null;
  return failure?.code === '23505' && (constraint === undefined || failure.constraint === constraint);
}

/** A foreign key refused the row (SQLSTATE 23503): what it names is gone; `constraint` names which one. */
export function isForeignKeyViolation(error: unknown, constraint: string): boolean {
  const failure = error as { code?: unknown; constraint?: unknown } | null;
  return failure?.code === '23503' && failure.constraint === constraint;
}
