import type { JobLock } from '../../jobs.js';
import type { Database } from './database.js';

/** First key of the advisory lock a scheduled job runs under; the second is the hash of the schema and the job's name. */
const JOB_LOCK = 0x6a6f6273; // "jobs"

/**
 * A job runs inside a transaction that holds its transaction-scoped advisory
 * lock (taken with try: a daemon that finds it held skips that run). The lock
 * goes with the transaction however it ends, a lost connection included, so
 * no run can leave it behind; the job's own statements run on other
 * connections of the pool, each committing as it goes.
 */
export class PostgresJobLock implements JobLock {
  constructor(private readonly database: Database) {}

  runAlone(jobName: string, work: () => Promise<unknown>): Promise<boolean> {
    return this.database.transaction(async (tx) => {
      const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS locked', [
        JOB_LOCK,
        `${this.database.schema}/${jobName}`,
      ]);
      if (!rows[0]!.locked) return false;
      await work();
      return true;
    });
  }
}
