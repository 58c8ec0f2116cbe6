import type { DaemonConfig } from '../config.js';
import type { Logger } from '../log.js';
import type { Services } from '../services.js';
import { createHttpApp } from './app.js';
import type { RouteModule } from './context.js';
import { createEndpointFactory, sessionCookieName } from './endpoint.js';
import { RouteTable } from './routes.js';
import { authRoutes } from './routes/auth.js';
import { catalogRoutes } from './routes/catalog.js';
import { chatRoutes } from './routes/chat.js';
import { deadLetterRoutes } from './routes/dead-letters.js';
import { deliveryRoutes } from './routes/deliveries.js';
import { eventRoutes } from './routes/events.js';
import { extensionConfigRoutes } from './routes/extension-config.js';
import { healthRoutes } from './routes/health.js';
import { openApiRoutes } from './routes/openapi.js';
import { operationsRoutes } from './routes/operations.js';
import { statusRoutes } from './routes/status.js';
import { streamRoutes } from './routes/streams.js';
import { subscriptionControlRoutes } from './routes/subscription-controls.js';
import { userRoutes } from './routes/users.js';
import { webhookRoutes } from './routes/webhooks.js';
import { workspaceRoutes } from './routes/workspaces.js';

const MODULES: RouteModule[] = [
  healthRoutes,
  authRoutes,
  userRoutes,
  catalogRoutes,
  workspaceRoutes,
  eventRoutes,
  deliveryRoutes,
  subscriptionControlRoutes,
  chatRoutes,
  deadLetterRoutes,
  statusRoutes,
  extensionConfigRoutes,
  webhookRoutes,
  operationsRoutes,
  streamRoutes,
  openApiRoutes,
];

export function buildRoutes(services: Services, config: DaemonConfig): RouteTable {
  const routes = new RouteTable();
  const endpoint = createEndpointFactory({
    auth: services.auth,
    maxBodyBytes: config.maxBodyBytes,
    crossSite: { corsOrigins: config.corsOrigins, secureCookies: config.secureCookies },
    sessionCookie: sessionCookieName(config.secureCookies),
  });
  for (const register of MODULES) register(routes, { endpoint, services, config });
  return routes;
}

export function createApiApp(services: Services, config: DaemonConfig, logger: Logger) {
  return createHttpApp(buildRoutes(services, config), logger);
}
