import type { DaemonConfig } from './config.js';
import { ensureFirstAdmin, type FirstAdmin } from './auth/bootstrap.js';
import { removeStaleSnapshots } from './backup/snapshot.js';
import { SEED_FILE, seedCatalog } from './catalog/seed.js';
import { createApiApp } from './http/index.js';
import { createRequestObserver } from './http/observe.js';
import { startHttpServer } from './http/server.js';
import { startJobs } from './jobs.js';
import { createLogger, type Logger } from './log.js';
import { openServices, type Services } from './services.js';
import { ensurePrivateDir } from './store/files.js';
import { lockDataDir } from './store/lock.js';

export interface Daemon {
  url: string;
  port: number;
  config: DaemonConfig;
  services: Services;
  /** The first admin created by this start, if the data directory had no users. */
  firstAdmin: FirstAdmin | null;
  /** Graceful: stop accepting, finish in-flight requests, flush storage, release the lock. */
  stop(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
}

/**
 * Opens the data directory (locked: one daemon per directory), brings every
 * store and background job up, then starts serving. Any failure undoes what
 * was started and rethrows (StartupError carries an operator-readable message).
 */
export async function startDaemon(config: DaemonConfig, options: StartOptions = {}): Promise<Daemon> {
  const logger = options.logger ?? createLogger();
  await ensurePrivateDir(config.dataDir);
  const lock = lockDataDir(config.dataDir);
  let opened: Awaited<ReturnType<typeof openServices>> | undefined;
  try {
    await removeStaleSnapshots(config.dataDir);
    opened = await openServices(config, logger);
    const { services } = opened;
    const firstAdmin = await ensureFirstAdmin(services.auth, config.dataDir, config.bootstrapAdmin);
    const seeded = config.seed ? await seedCatalog(services.catalog, services.auth.users) : null;
    opened.start();
    const observer = createRequestObserver(logger, services.metrics);
    const http = await startHttpServer(createApiApp(services, config, logger), config, observer);
    const jobs = startJobs(opened.jobs, logger);

    if (firstAdmin?.generatedPassword) {
      logger.info(
        `created the first administrator ${firstAdmin.email} with password ${firstAdmin.generatedPassword} ` +
          `(shown once; also in ${firstAdmin.passwordFile})`,
      );
    } else if (firstAdmin) {
      logger.info(`created the first administrator ${firstAdmin.email}`);
    }
    if (seeded !== null) logger.info(`seeded the empty catalog with ${seeded} extensions from ${SEED_FILE}`);
    logger.info(`platform listening on ${http.url} (data: ${config.dataDir})`);

    let stopping: Promise<void> | null = null;
    const ready = opened;
    return {
      url: http.url,
      port: http.port,
      config,
      services,
      firstAdmin,
      stop() {
        stopping ??= (async () => {
          await http.close(config.shutdownGraceMs);
          await ready.stop();
          await jobs.stop();
          await ready.close();
          lock.release();
          logger.info('platform stopped');
          logger.flush();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await opened?.stop().catch(() => undefined);
    await opened?.close().catch(() => undefined);
    lock.release();
    throw error;
  }
}
