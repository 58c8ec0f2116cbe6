import type { DaemonConfig } from '../config.js';
import type { Services } from '../services.js';

/**
 * What a route module is built with. A module supplies the handlers of some
 * operations of the endpoint table (src/contract/endpoints.ts), as an object
 * that `satisfies Partial<Handlers>`; the table says everything else.
 */
export interface HttpContext {
  services: Services;
  config: DaemonConfig;
}
