import type pg from 'pg';
import type { Stores } from '../stores.js';
import { postgresStores } from './stores.js';
import { ChangeFeed } from './change-feed.js';
import { Database, type Queryable } from './database.js';

/**
 * A Database whose queries, and the transactions stores open on it, all run in
 * one transaction already open on `tx`. Stores built on it write into that
 * transaction, so an operation made of many store calls (an import, a key
 * rotation) commits or rolls back as one. (A subclass, as stores take a
 * Database; the pool it inherits is never connected.)
 */
class TransactionDatabase extends Database {
  constructor(
    settings: Database['settings'],
    private readonly tx: Queryable,
  ) {
    super(settings, () => undefined);
  }

  override query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.tx.query<R>(text, values);
  }

  /** Part of the enclosing transaction: its failure fails (and rolls back) that one. */
  override transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return work(this.tx);
  }

  override dedicatedClient(): never {
    throw new Error('a transaction has no connection of its own to listen on');
  }
}

/**
 * Runs `work` with the PostgreSQL stores inside one transaction of
 * `database`: committed when it resolves, rolled back when it throws. `tx` is
 * that transaction, for what the stores' interfaces cannot write. Changes are
 * announced to other daemons (NOTIFY) when it commits, as each store's own
 * transaction would.
 */
export function inOneTransaction<T>(database: Database, work: (stores: Stores, tx: Queryable) => Promise<T>): Promise<T> {
  return database.transaction(async (tx) => {
    const bound = new TransactionDatabase(database.settings, tx);
    const stores = postgresStores(bound, new ChangeFeed(bound, () => undefined));
    try {
      const result = await work(stores, tx);
      // What the stores still write goes into the transaction; their timers (lease renewal) stop.
      await stores.close();
      return result;
    } catch (error) {
      // The transaction is aborted: what closing would still write fails, and must not hide why.
      await stores.close().catch(() => undefined);
      throw error;
    } finally {
      await bound.close();
    }
  });
}
