import { rm } from 'node:fs/promises';
import { resolveConfig, type DaemonConfig } from '../../src/daemon/config.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { createLogger, type LoggerOptions } from '../../src/daemon/log.js';
import { api, call, tokenOf, type Api } from './http.js';
import { testDatabaseFor } from './postgres.js';
import { tempDir } from './temp.js';

export const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

export interface TestDaemon {
  url: string;
  dataDir: string;
  daemon: Daemon;
  /** Everything the daemon logged (stdout and stderr), one entry per write. */
  logs: string[];
  /** Anonymous client. */
  anon: Api;
  /** Logs in and returns a client carrying that session. */
  as(email: string, password: string): Promise<Api & { token: string }>;
  admin(): Promise<Api & { token: string }>;
  /** Stops and starts again on the same data directory. */
  restart(overrides?: Partial<DaemonConfig>): Promise<TestDaemon>;
  stop(): Promise<void>;
  /** Stops and deletes the data directory. */
  destroy(): Promise<void>;
}

/**
 * The real daemon, in this process, on port 0 with a fresh temp data directory
 * (or the given one). bcrypt runs at cost 4 so that tests do not wait on it.
 * On the PostgreSQL pass (PLATFORM_TEST_BACKEND=postgres) it keeps its state in
 * a database of its own, the same one again when it restarts on that directory.
 */
export async function startTestDaemon(
  overrides: Partial<DaemonConfig> = {},
  dataDir?: string,
  loggerOptions: LoggerOptions = {},
): Promise<TestDaemon> {
  const dir = dataDir ?? (await tempDir());
  const databaseUrl = 'database' in overrides ? null : await testDatabaseFor(dir);
  const config: DaemonConfig = {
    ...resolveConfig({ port: '0', dataDir: dir, ...(databaseUrl ? { databaseUrl } : {}) }, {}),
    bcryptCost: 4,
    bootstrapAdmin: ADMIN,
    shutdownGraceMs: 2000,
    ...overrides,
  };
  const logs: string[] = [];
  const logger = createLogger({
    sink: { out: (text) => logs.push(text), err: (text) => logs.push(text) },
    format: 'text',
    access: true,
    ...loggerOptions,
  });
  const daemon = await startDaemon(config, { logger });
  let adminClient: (Api & { token: string }) | undefined;

  const self: TestDaemon = {
    url: daemon.url,
    dataDir: dir,
    daemon,
    get logs() {
      logger.flush();
      return logs;
    },
    anon: api(daemon.url),
    async as(email, password) {
      const result = await call(daemon.url, 'POST', '/api/auth/login', { json: { email, password } });
      if (result.status !== 200) throw new Error(`login as ${email} failed: ${result.status} ${result.text}`);
      const token = tokenOf(result);
      return Object.assign(api(daemon.url, token), { token });
    },
    async admin() {
      adminClient ??= await self.as(ADMIN.email, ADMIN.password);
      return adminClient;
    },
    async restart(more = {}) {
      await daemon.stop();
      return startTestDaemon({ ...overrides, ...more }, dir, loggerOptions);
    },
    stop: () => daemon.stop(),
    async destroy() {
      await daemon.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return self;
}

/** Creates a user through the API and returns a logged-in client for it. */
export async function createUser(
  t: TestDaemon,
  email: string,
  options: { roles?: string[]; fullName?: string; password?: string } = {},
) {
  const admin = await t.admin();
  const password = options.password ?? 'user-password-1';
  const created = await admin.post('/api/admin/users', {
    email,
    fullName: options.fullName ?? email.split('@')[0],
    password,
    ...(options.roles ? { roles: options.roles } : {}),
  });
  if (created.status !== 201) throw new Error(`creating ${email} failed: ${created.status} ${created.text}`);
  const client = await t.as(email, password);
  return Object.assign(client, { id: created.body.data.id as string, password });
}
