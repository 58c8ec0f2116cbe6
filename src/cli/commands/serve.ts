import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { examples } from '../help.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the daemon in the foreground')
    .addHelpText('after', examples('platform serve --port 8080 --data-dir ./data'))
    .option('--host <host>', 'address to listen on (PLATFORM_HOST; default 127.0.0.1)')
    .option('--port <port>', 'port to listen on, 0 for any free one (PLATFORM_PORT; default 8080)')
    .option('--data-dir <dir>', 'data directory (PLATFORM_DATA_DIR; default ./data)')
    .option('--database-url <url>', 'keep every piece of state in this PostgreSQL database instead (PLATFORM_DATABASE_URL)')
    .option('--database-schema <name>', "schema of the platform's tables in it (PLATFORM_DATABASE_SCHEMA; default platform)")
    .option('--max-body <size>', 'largest request body, e.g. 1mb (PLATFORM_MAX_BODY; default 1mb)')
    .option('--secure-cookies', 'behind TLS: the session cookie becomes __Host-platform_token, Secure (PLATFORM_SECURE_COOKIES)')
    .option('--seed', 'add the development catalog\'s extensions (seed/catalog.json) that the catalog lacks (PLATFORM_SEED)')
    .option('--plugins-dir <dir>', 'in-process plugins folder (PLATFORM_PLUGINS_DIR; default <data-dir>/plugins)')
    .option('--retry-schedule <ms,...>', 'delays between delivery attempts in ms (PLATFORM_RETRY_SCHEDULE; default 1000,5000,30000,120000,600000)')
    .option('--cors-origin <origins>', 'browser origins allowed to call the API, comma-separated (PLATFORM_CORS_ORIGIN; default none)')
    .option('--allowed-hosts <hosts>', 'host names requests may be addressed to besides loopback ones, comma-separated (PLATFORM_ALLOWED_HOSTS; default none)')
    .option('--deny-private-targets', 'refuse subscriber URLs that resolve to loopback, private or link-local addresses (PLATFORM_DENY_PRIVATE_TARGETS)')
    .option('--log-format <format>', 'json or text (PLATFORM_LOG_FORMAT; default text on a terminal, json otherwise)')
    .option('--log-level <level>', 'debug, info, warn or error (PLATFORM_LOG_LEVEL; default info)')
    .option('--quiet', 'no access line per request (they are on by default when stdout is not a terminal)')
    .action(async (flags) => {
      const config = await daemonConfig(flags);
      const { startDaemon } = await import('../../daemon/index.js');
      const { createLogger } = await import('../../daemon/log.js');
      const { describeFault } = await import('../../daemon/errors.js');
      // Plugins run in this process: a promise one leaves rejected, or an error one throws from a
      // timer, would otherwise end the daemon (Node's default). Say so, and keep serving.
      const logger = createLogger({ format: config.log.format, level: config.log.level, ...(config.log.quiet ? { access: false } : {}) });
      const report = (kind: string) => (error: unknown) => logger.error(`${kind} outside any request: ${describeFault(error)}`);
      process.on('unhandledRejection', report('a promise was rejected'));
      process.on('uncaughtException', report('an exception was thrown'));
      // Listening before the start completes: a signal during the start stops the daemon once it is
      // up, never kills it half-started. SIGHUP (its terminal closed) stops as cleanly as SIGTERM.
      let starting = true;
      const signal = new Promise<NodeJS.Signals>((resolve) => {
        for (const name of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
          process.once(name, (received: NodeJS.Signals) => {
            if (starting) logger.info(`received ${received} while starting; stopping as soon as the start is complete`);
            resolve(received);
          });
        }
      });
      const daemon = await startDaemon(config, { logger });
      starting = false;
      const received = await signal;
      process.once('SIGINT', () => process.exit(130));
      logger.info(`received ${received}; stopping (finishing requests in flight${received === 'SIGINT' ? '; Ctrl-C again to force' : ''})`);
      await daemon.stop(received);
      process.exit(0);
    });
}
