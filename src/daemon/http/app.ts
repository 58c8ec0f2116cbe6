import { createApp, isError, type App } from 'h3';
import { DomainError } from '../errors.js';
import type { Logger } from '../log.js';
import { consoleLayer } from './console.js';
import { sendError } from './envelope.js';
import type { RouteTable } from './routes.js';

/**
 * The h3 app: the web console's files in front of the routes, and one error
 * handler that turns everything into the envelope.
 */
export function createHttpApp(routes: RouteTable, logger: Logger): App {
  const report = (error: unknown) =>
    logger.error(error instanceof Error ? (error.stack ?? error.message) : 'non-error thrown');
  const app = createApp({
    onError(error, event) {
      sendError(event.node.res, toReportable(error, event.path), report);
    },
  });
  const outsideApi = new Set(routes.list().map((route) => route.split(' ')[1]!).filter((path) => !path.startsWith('/api/')));
  const consoleFiles = consoleLayer(outsideApi);
  if (consoleFiles) app.use(consoleFiles.handler, { match: consoleFiles.match });
  else logger.info('the web console is not built (npm run build); serving the API only');
  app.use(routes.toRouter());
  return app;
}

/** h3 wraps what handlers throw: unwrap our errors, and give h3's own 4xx answers our codes. */
function toReportable(error: unknown, path: string): unknown {
  if (!isError(error)) return error;
  if (error.cause instanceof Error) return error.cause;
  if (error.statusCode === 404) {
    return new DomainError('NOT_FOUND', `no route matches ${path.split('?', 1)[0]!.slice(0, 200)}`);
  }
  if (error.statusCode >= 400 && error.statusCode < 500) {
    return new DomainError('VALIDATION_ERROR', 'the request could not be understood');
  }
  return error;
}
