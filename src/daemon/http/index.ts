import type { DaemonConfig } from '../config.js';
import type { Logger } from '../log.js';
import type { Services } from '../services.js';
import { createHttpApp } from './app.js';
import { endpoints, type EndpointDeclaration, type OperationId } from '../../contract/endpoints.js';
import type { Caller } from '../auth/service.js';
import { endpointHandler, sessionCookieName, type Handlers } from './endpoint.js';
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

type Intersection<U> = (U extends unknown ? (part: U) => void : never) extends (part: infer I) => void ? I : never;

/** The handlers of all modules in one object; an operation handled twice is a mistake. */
function merged<T extends object[]>(...modules: T): Intersection<T[number]> {
  const supplied = modules.flatMap((module) => Object.keys(module));
  const twice = supplied.filter((operationId, index) => supplied.indexOf(operationId) !== index);
  if (twice.length > 0) throw new Error(`operations with handlers in two route modules: ${twice.join(', ')}`);
  return Object.assign({}, ...modules) as Intersection<T[number]>;
}

/**
 * The router: each operation of the endpoint table with its module's handler.
 * It does not compile while an operation has no handler.
 */
export function buildRoutes(services: Services, config: DaemonConfig): RouteTable {
  const context = { services, config };
  const handlers: Handlers = merged(
    healthRoutes(context),
    authRoutes(context),
    userRoutes(context),
    catalogRoutes(context),
    workspaceRoutes(context),
    eventRoutes(context),
    deliveryRoutes(context),
    subscriptionControlRoutes(context),
    chatRoutes(context),
    deadLetterRoutes(context),
    statusRoutes(context),
    extensionConfigRoutes(context),
    webhookRoutes(context),
    operationsRoutes(context),
    streamRoutes(context),
    openApiRoutes(context),
  );
  const deps = {
    auth: services.auth,
    authenticateInstallation: (token: string) => services.installations.authenticate(token),
    assertMember: (caller: Caller, workspaceId: string) => services.workspaces.assertMember(caller.user, workspaceId),
    maxBodyBytes: config.maxBodyBytes,
    crossSite: { corsOrigins: config.corsOrigins, secureCookies: config.secureCookies },
    sessionCookie: sessionCookieName(config.secureCookies),
  };
  const routes = new RouteTable();
  for (const [operationId, declaration] of Object.entries(endpoints) as [OperationId, EndpointDeclaration][]) {
    routes.add(declaration.method, declaration.path, endpointHandler(declaration, handlers[operationId] as (context: never) => unknown, deps));
  }
  return routes;
}

export function createApiApp(services: Services, config: DaemonConfig, logger: Logger) {
  return createHttpApp(buildRoutes(services, config), logger);
}
