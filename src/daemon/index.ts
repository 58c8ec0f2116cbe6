import type { DaemonConfig } from './config.js';
import { ensureFirstAdmin, leftoverPasswordFile, type FirstAdmin } from './auth/bootstrap.js';
import { removeStaleSnapshots } from './backup/snapshot.js';
import { SEED_FILE, describeSeeding, seedCatalog } from './catalog/seed.js';
import { createApiApp } from './http/index.js';
import { createRequestObserver } from './http/observe.js';
import { startHttpServer, type HttpServer } from './http/server.js';
import { startJobs } from './jobs.js';
import { createLogger, type Logger } from './log.js';
import { openServices, type Services } from './services.js';
import { takeTornTails } from './store/append-log.js';
import { openDataDir, tightenPlatformFiles } from './store/data-dir.js';
import { lockDataDir } from './store/lock.js';
import { redactUrl } from './database-settings.js';
import { settleWhenIdle } from './settle.js';
import { keepTickShapeAlive } from './tick-shape.js';

export interface Daemon {
  url: string;
  port: number;
  config: DaemonConfig;
  services: Services;
  /** The first admin created by this start, if the data directory had no users. */
  firstAdmin: FirstAdmin | null;
  /** Graceful: stop accepting, finish in-flight requests, flush storage, release the lock. */
  stop(signal?: NodeJS.Signals): Promise<void>;
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
  keepTickShapeAlive();
  const logger = options.logger ?? createLogger();
  await openDataDir(config.dataDir, config.pluginsDir);
  const lock = lockDataDir(config.dataDir);
  let opened: Awaited<ReturnType<typeof openServices>> | undefined;
  let http: HttpServer | undefined;
  try {
    const tightened = await tightenPlatformFiles(config.dataDir);
    await removeStaleSnapshots(config.dataDir);
    opened = await openServices(config, logger);
    const { services } = opened;
    const resumed = await opened.start();
    // Listen before creating anything: a port in use must not leave an administrator whose
    // generated password was never shown. Until `started()` below, every request is answered
    // 503 (health: status starting), so that the first 200 means the administrator and the
    // seed are there.
    http = await startHttpServer(createApiApp(services, config, logger), config, createRequestObserver(logger, services.metrics, config.countRequests));
    const firstAdmin = await ensureFirstAdmin(services.auth, config.dataDir, config.bootstrapAdmin);
    const seeded = config.seed ? await seedCatalog(services.catalog, services.auth.users) : null;
    const leftover = firstAdmin ? null : await leftoverPasswordFile(services.auth, config.dataDir);
    const jobs = startJobs(opened.jobs, opened.jobLock, logger, services.metrics.jobRan);
    http.started();
    const cancelSettling = settleWhenIdle(config.settle, (cause) =>
      logger.debug(`ran a full garbage collection, the daemon idle after ${cause === 'start' ? 'its start' : 'its heap grew'}`),
    );

    if (lock.tookOver) logger.info(lock.tookOver);
    for (const file of tightened) logger.warn(`${file} was readable by others; its mode is now 0600`);
    for (const { file, bytes } of takeTornTails(config.dataDir)) {
      logger.info(`cut a torn last line (${bytes} bytes, never acknowledged) off ${file}`);
    }
    if (resumed > 0) logger.info(`resumed ${resumed} pending deliveries`);
    if (firstAdmin?.generatedPassword) {
      logger.info(
        `created the first administrator ${firstAdmin.email} with password ${firstAdmin.generatedPassword} ` +
          `(shown once; also in ${firstAdmin.passwordFile})`,
      );
    } else if (firstAdmin) {
      logger.info(`created the first administrator ${firstAdmin.email} from PLATFORM_ADMIN_EMAIL and PLATFORM_ADMIN_PASSWORD`);
    }
    if (leftover) logger.warn(leftover);
    if (seeded !== null) logger.info(describeSeeding(seeded, SEED_FILE));
    const storage = config.database ? `database: ${redactUrl(config.database.url)}, schema ${config.database.schema}; ` : '';
    logger.info(`platform listening on ${http.url} (${storage}data: ${config.dataDir})`);

    let stopping: Promise<void> | null = null;
    const ready = opened;
    const server = http;
    return {
      url: http.url,
      port: http.port,
      config,
      services,
      firstAdmin,
      stop(signal?: NodeJS.Signals) {
        stopping ??= (async () => {
          // Live streams never finish by themselves: end them so that closing waits only for real requests.
          services.activity.close();
          cancelSettling();
          await server.close(config.shutdownGraceMs);
          await ready.stop();
          await jobs.stop();
          await ready.close();
          lock.release();
          logger.info(signal ? `platform stopped (${signal})` : 'platform stopped');
          logger.flush();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await http?.close(0).catch(() => undefined);
    await opened?.stop().catch(() => undefined);
    await opened?.close().catch(() => undefined);
    lock.release();
    throw error;
  }
}
