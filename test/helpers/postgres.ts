import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import type { Test } from 'uvu';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../dev/embedded-postgres.js';
import { openMigratedDatabase } from '../../src/daemon/store/postgres/connect.js';

/**
 * One real PostgreSQL for the whole test process (uvu runs every file in one
 * process), started by the first test that asks for a database: initialising a
 * cluster takes seconds, creating a database a few milliseconds. The cluster
 * lives in a temp folder and is removed when the process is about to exit.
 */
let cluster: Promise<EmbeddedPostgres> | null = null;
let databases = 0;

/** The URL of a new, empty database on the test cluster: one per test file (or per test that needs its own). */
export async function freshDatabase(): Promise<string> {
  const started = await (cluster ??= startCluster());
  databases += 1;
  return started.createDatabase(`test_${process.pid}_${databases}`);
}

/**
 * Which backend daemons of this test run keep their state in: `PLATFORM_TEST_BACKEND=postgres`
 * (the second pass of `npm test`) or the data directory. A behaviour is tested once and
 * runs on both; tests that only make sense on one backend say so in their name.
 */
export const TEST_BACKEND: 'files' | 'postgres' = process.env.PLATFORM_TEST_BACKEND === 'postgres' ? 'postgres' : 'files';

/** Where the schema every daemon of the run starts on is migrated once, to be copied. */
let migratedTemplate: Promise<string> | null = null;

/**
 * A new database whose schema a daemon's start finds up to date: a copy of
 * one migrated once per run. Migrating takes some 100 ms of the server's
 * time, a copy a few ms; hundreds of daemons start in the PostgreSQL pass.
 * Migrating an empty database is tested where it is the behaviour
 * (postgres-migrations, multi-daemon), on freshDatabase.
 */
async function migratedDatabase(): Promise<string> {
  const started = await (cluster ??= startCluster());
  migratedTemplate ??= (async () => {
    const name = `test_${process.pid}_migrated`;
    const { database } = await openMigratedDatabase({ url: await started.createDatabase(name), schema: 'platform' }, () => undefined);
    await database.close();
    return name;
  })();
  const template = await migratedTemplate;
  databases += 1;
  return started.createDatabase(`test_${process.pid}_${databases}`, template);
}

const databaseByDataDir = new Map<string, Promise<string>>();

/**
 * On the PostgreSQL pass, the database of the daemon that uses `dataDir`: a new one,
 * migrated (see migratedDatabase), the first time, the same one when a daemon starts again on that directory
 * (a restart keeps its state, as on files). Null on the file pass.
 */
export function testDatabaseFor(dataDir: string): Promise<string> | null {
  if (TEST_BACKEND !== 'postgres') return null;
  let url = databaseByDataDir.get(dataDir);
  if (!url) {
    url = migratedDatabase();
    databaseByDataDir.set(dataDir, url);
  }
  return url;
}

async function startCluster(): Promise<EmbeddedPostgres> {
  const started = await startEmbeddedPostgres('test');
  letTestsEnd(started);
  let stopping = false;
  process.on('beforeExit', () => {
    if (stopping) return;
    stopping = true;
    const child = started.process;
    child.ref();
    for (const pipe of pipesOf(child)) pipe?.ref();
    void started
      .stop()
      .catch((error: unknown) => console.error(`stopping the test PostgreSQL: ${String(error)}`));
  });
  // process.exit() (uvu --bail) skips 'beforeExit': at least stop the server.
  process.on('exit', () => {
    if (!stopping) started.process.kill('SIGINT');
  });
  return started;
}

const pipesOf = (child: ChildProcess) => [child.stdin, child.stdout, child.stderr] as Array<{ ref(): void; unref(): void } | null>;

/** The server process and its pipes would keep the test process alive after the last test: unreferenced, the process reaches 'beforeExit', and the cluster is stopped there. */
function letTestsEnd(started: EmbeddedPostgres): void {
  started.process.unref();
  for (const pipe of pipesOf(started.process)) pipe?.unref();
}

/** Restarts the test cluster under whatever is connected to it, once `whileDown` resolves: for tests of a database restart mid-load. */
export async function restartTestPostgres(whileDown: () => Promise<void> = async () => undefined): Promise<void> {
  if (!cluster) throw new Error('no test PostgreSQL has been started');
  const started = await cluster;
  await started.restart(whileDown);
  letTestsEnd(started);
}

/**
 * `test` on the file pass, `test.skip` on the PostgreSQL pass: for a test that only
 * makes sense on the data directory's files (it reads them, breaks them, or fills
 * their disk). Its name says why.
 */
export function filesOnly(suite: Test): Test | Test['skip'] {
  return TEST_BACKEND === 'files' ? suite : suite.skip;
}

/**
 * `test` on the PostgreSQL pass, `test.skip` on the file pass: for a test of
 * what only a database does (its connection is lost, a transaction rolls
 * back). Its name says why.
 */
export function postgresOnly(suite: Test): Test | Test['skip'] {
  return TEST_BACKEND === 'postgres' ? suite : suite.skip;
}

/** Runs SQL on the database of the daemon that uses `dataDir` (the PostgreSQL pass only). */
export async function onDatabaseOf<T>(dataDir: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const url = await testDatabaseFor(dataDir);
  if (url === null) throw new Error('onDatabaseOf runs on the PostgreSQL pass only');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}
