// The steps of `platform db import`: import.ts runs them, import-events.ts holds those of events and deliveries.
import type { Queryable } from './postgres/database.js';
import type { Stores } from './stores.js';

/** How many of one kind a step copied, for the report. */
export interface Copied {
  /** Plural, as the report shows it: "users", "audit records". */
  kind: string;
  count: number;
}

/** Where a step writes: the PostgreSQL stores, and the transaction they write in for rows their interfaces cannot write as they were. */
export interface ImportTarget {
  stores: Stores;
  tx: Queryable;
}

/**
 * One domain's copy: it reads its data from the data directory (through the
 * file store where its interface can list everything) and writes it into the
 * target, ids, timestamps, numbers and sealed secrets as they are.
 */
export interface CopyStep {
  /** Named in the error when the step fails. */
  name: string;
  copy(dataDir: string, target: ImportTarget): Promise<Copied[]>;
}
