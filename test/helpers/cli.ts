import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testDatabaseFor } from './postgres.js';
import { tempDirSync } from './temp.js';
import { keepArtifact } from './artifacts.js';
import { waitFor } from './wait.js';

export const PLATFORM_BIN = fileURLToPath(new URL('../../bin/platform', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Where the CLI runs unless a test says otherwise: never in the clone, whose
 * `./data` and `~/.config/platform` may be a running daemon's and its user's
 * (the README's daemon may run in the same clone while the tests do).
 */
export const CLI_SCRATCH = tempDirSync('platform-cli-');

/**
 * Runs `bin/platform` as a process (the built CLI), with stdin piped, never a TTY,
 * in a scratch folder with a scratch HOME unless `cwd` or `env.HOME` are given.
 * With `shell`, runs that shell with `args` instead (for pipelines).
 */
export function runCli(
  args: string[],
  options: { env?: Record<string, string>; input?: string; cwd?: string; shell?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.shell ?? process.execPath, options.shell ? args : [PLATFORM_BIN, ...args], {
      cwd: options.cwd ?? CLI_SCRATCH,
      env: { PATH: process.env.PATH ?? '', HOME: CLI_SCRATCH, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

export interface DaemonProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

/**
 * Environment for a daemon a test SIGKILLs. On PostgreSQL the restarted daemon takes over
 * the killed one's deliveries only once their lease lapsed (PLATFORM_DELIVERY_LEASE, 30 s
 * by default): 2 s keeps those tests short, and a daemon that is alive (renewing every third
 * of the lease) loses it only if it stalls for 2 s. The files backend has no leases.
 */
export const SHORT_DELIVERY_LEASE = { PLATFORM_DELIVERY_LEASE: '2' };

/**
 * How long a spawned daemon has to print its start line: a start on PostgreSQL (a fresh
 * database migrated, the administrator created, maybe the seed) once took more than 10 s on
 * a machine running both passes slowly.
 */
const START_LINE_TIMEOUT_MS = 30_000;

/**
 * Starts `platform serve --port 0` as a process and waits for its start line. On the
 * PostgreSQL pass it gets `--database-url` (a database per data directory; see
 * testDatabaseFor) unless the test gives a database itself.
 */
export async function spawnDaemon(dataDir: string, env: Record<string, string> = {}, extraArgs: string[] = []): Promise<DaemonProcess> {
  const givesDatabase = extraArgs.includes('--database-url') || env.PLATFORM_DATABASE_URL !== undefined;
  const databaseUrl = givesDatabase ? null : await testDatabaseFor(dataDir);
  const databaseArgs = databaseUrl ? ['--database-url', databaseUrl] : [];
  // Started as an operator starts it, through the script's own launcher line (see bin/platform).
  const child = spawn(PLATFORM_BIN, ['serve', '--port', '0', '--data-dir', dataDir, ...databaseArgs, ...extraArgs], {
    cwd: CLI_SCRATCH,
    env: { PATH: process.env.PATH ?? '', HOME: CLI_SCRATCH, PLATFORM_BCRYPT_COST: '4', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  let ended = false;
  void exited.then(() => (ended = true));
  const spawnedAt = performance.now();
  const url: string = await waitFor<string>(
    'the daemon start line',
    () => {
      if (ended) throw new Error(`the daemon exited before listening:\n${output}`);
      return /listening on (http:\/\/\S+)/.exec(output)?.[1] ?? '';
    },
    START_LINE_TIMEOUT_MS,
  ).catch((error: Error) => {
    // A daemon left running would hold its pipes open, and with them the test process: the whole
    // pass would hang instead of failing this test. What it said is kept for the next look.
    child.kill('SIGKILL');
    const kept = keepArtifact('spawn-daemon', `no start line ${Math.round(performance.now() - spawnedAt)} ms after the spawn\n\n${output}`);
    throw new Error(`${error.message} (its output: ${kept})`);
  });
  return { url, child, output: () => output, exited };
}

/**
 * Runs `bin/platform` on a pseudo-terminal (util-linux `script`), for prompts:
 * `answers` are typed once the prompt is on screen (once `waitFor` shows), or
 * each of `steps` in turn, once its `after` shows after the previous step. `shellSuffix` is appended to
 * the command line, e.g. `> file` to redirect stdout while stdin stays a terminal.
 * The result's `stdout` is everything the terminal showed.
 */
export function runCliOnTty(
  args: string[],
  options: {
    env?: Record<string, string>;
    answers?: string;
    waitFor?: string;
    steps?: Array<{ after: string; type: string }>;
    shellSuffix?: string;
  } = {},
): Promise<CliResult> {
  const steps = options.steps ?? (options.answers === undefined ? [] : [{ after: options.waitFor ?? '?', type: options.answers }]);
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  const commandLine = [process.execPath, PLATFORM_BIN, ...args].map(quote).join(' ') + (options.shellSuffix ? ` ${options.shellSuffix}` : '');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qefc', commandLine, '/dev/null'], {
      cwd: CLI_SCRATCH,
      env: { PATH: process.env.PATH ?? '', HOME: CLI_SCRATCH, TERM: 'dumb', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let next = 0;
    /** Where the output after the previous step starts. */
    let seenUpTo = 0;
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const step = steps[next];
      if (step && stdout.indexOf(step.after, seenUpTo) >= 0) {
        next += 1;
        seenUpTo = stdout.length;
        child.stdin.write(step.type);
      }
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    // A prompt nobody answers would hang the test run: give up after a while.
    // (`script` itself exits 0 when killed, so a kill is reported as code null.)
    let killed = false;
    const guard = setTimeout(() => {
      killed = true;
      child.kill();
    }, 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code: killed ? null : code, stdout, stderr });
    });
  });
}
