import type { DaemonConfig } from '../config.js';
import type { Services } from '../services.js';
import type { EndpointFactory } from './endpoint.js';
import type { RouteTable } from './routes.js';

export interface HttpContext {
  endpoint: EndpointFactory;
  services: Services;
  config: DaemonConfig;
}

/** Each route module adds its routes to the table. */
export type RouteModule = (routes: RouteTable, context: HttpContext) => void;
