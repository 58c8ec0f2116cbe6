import { rm } from 'node:fs/promises';
import { test } from 'uvu';
import { ChangeFeed } from '../../src/daemon/store/postgres/change-feed.js';
import { Database } from '../../src/daemon/store/postgres/database.js';
import { migrate } from '../../src/daemon/store/postgres/migrate.js';
import { openFileStores, type StoreOptions, type Stores } from '../../src/daemon/store/stores.js';
import { postgresStores } from '../../src/daemon/store/postgres/stores.js';
import { freshDatabase } from './postgres.js';
import { tempDir } from './temp.js';

/** The stores of one daemon, opened on a site's data. */
export interface OpenedStores {
  stores: Stores;
  /** Starts hearing other daemons' changes (a no-op where there are none). */
  listen(): Promise<void>;
  /** PostgreSQL only: the daemon's database, for tests that break its connections. */
  database?: Database;
  /** What the change feed reported (a lost connection), instead of printing it. */
  feedErrors: string[];
  close(): Promise<void>;
}

/** The data of one test case: a temp data directory, or a schema of its own in the test file's database. */
export interface StoreSite {
  /** A restarted daemon on the same data; on a shared backend, also one more daemon beside the first. */
  open(options?: StoreOptions): Promise<OpenedStores>;
  destroy(): Promise<void>;
}

/** Runs `run` on the stores of a daemon opened on the site (with `options`), closed afterwards whatever happens. */
export async function using<T>(site: StoreSite, run: (opened: OpenedStores) => Promise<T>, options: StoreOptions = {}): Promise<T> {
  const opened = await site.open(options);
  try {
    return await run(opened);
  } finally {
    await opened.close();
  }
}

/** Runs `run` on the stores of two daemons opened on the site (both with `options`), both closed afterwards whatever happens. */
export async function usingTwo<T>(site: StoreSite, run: (first: OpenedStores, second: OpenedStores) => Promise<T>, options: StoreOptions = {}): Promise<T> {
  return using(site, (first) => using(site, (second) => run(first, second), options), options);
}

export interface Backend {
  name: 'file' | 'postgres';
  /** Several daemons may use one site at once. */
  shared: boolean;
  site(): Promise<StoreSite>;
}

const fileBackend: Backend = {
  name: 'file',
  shared: false,
  async site() {
    const dir = await tempDir();
    return {
      async open(options) {
        const stores = await openFileStores(dir, options);
        return { stores, listen: async () => undefined, feedErrors: [], close: () => stores.close() };
      },
      destroy: () => rm(dir, { recursive: true, force: true }),
    };
  },
};

let database: Promise<string> | null = null;
let schemas = 0;

const postgresBackend: Backend = {
  name: 'postgres',
  shared: true,
  async site() {
    const url = await (database ??= freshDatabase());
    const schema = `case_${(schemas += 1)}`;
    return {
      async open(options) {
        const db = new Database({ url, schema }, (error) => console.error(`idle connection: ${error.message}`));
        await migrate(db);
        const feedErrors: string[] = [];
        const feed = new ChangeFeed(db, (error) => feedErrors.push(error.message));
        const stores = postgresStores(db, feed, options);
        return {
          stores,
          listen: () => feed.start(),
          database: db,
          feedErrors,
          async close() {
            await stores.close();
            await feed.close();
            await db.close();
          },
        };
      },
      destroy: async () => undefined,
    };
  },
};

export const BACKENDS: Backend[] = [fileBackend, postgresBackend];

/**
 * Registers `run` once per backend, named after it: the conformance suites
 * write a behaviour once and hold both implementations to it.
 */
export function conformance(name: string, run: (site: StoreSite, backend: Backend) => Promise<void>, only?: { shared: true }): void {
  for (const backend of BACKENDS) {
    if (only?.shared && !backend.shared) continue;
    test(`${backend.name}: ${name}`, async () => {
      const site = await backend.site();
      try {
        await run(site, backend);
      } finally {
        await site.destroy();
      }
    });
  }
}

/** The rejection of `promise`, or a failure if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection, but it resolved');
}
