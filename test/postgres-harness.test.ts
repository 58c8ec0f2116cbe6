import { test } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { freshDatabase } from './helpers/postgres.js';

/** The test PostgreSQL (test/helpers/postgres.ts) looks into its own tables, so this file says so. */
test('tables: each freshDatabase() is a database of its own on the shared test cluster', async () => {
  const [first, second] = [await freshDatabase(), await freshDatabase()];
  assert.is.not(first, second);
  const one = new pg.Client({ connectionString: first });
  const two = new pg.Client({ connectionString: second });
  await Promise.all([one.connect(), two.connect()]);
  try {
    await one.query('CREATE TABLE only_here (id int)');
    const here = await one.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'only_here'`);
    const there = await two.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'only_here'`);
    assert.equal([here.rows[0].n, there.rows[0].n], [1, 0]);
  } finally {
    await Promise.all([one.end(), two.end()]);
  }
});

test.run();
