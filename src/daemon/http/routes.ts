import { createRouter, defineEventHandler, type EventHandler, type Router } from 'h3';
import type { HttpMethod } from '../../contract/endpoints.js';
import { DomainError } from '../errors.js';
import type { ObservedRequest } from './observe.js';

/**
 * Collects the routes of every module, then builds the h3 router. A known path
 * called with another method answers 405 with an Allow header.
 */
export class RouteTable {
  private readonly paths = new Map<string, Map<HttpMethod, EventHandler>>();

  add(method: HttpMethod, path: string, handler: EventHandler): this {
    const methods = this.paths.get(path) ?? new Map<HttpMethod, EventHandler>();
    if (methods.has(method)) throw new Error(`route ${method} ${path} is registered twice`);
    methods.set(method, handler);
    this.paths.set(path, methods);
    return this;
  }

  /** Every registered "METHOD path", for documentation checks. */
  list(): string[] {
    return [...this.paths].flatMap(([path, methods]) => [...methods.keys()].map((method) => `${method} ${path}`));
  }

  /** Every registered route with its handler, in registration order. */
  toRouter(): Router {
    const router = createRouter({ preemptive: true });
    for (const [path, methods] of this.paths) {
      for (const [method, handler] of methods) router.add(path, labelled(path, handler), method.toLowerCase() as Lowercase<HttpMethod>);
      const allow = [...methods.keys()].join(', ');
      // router.use registers for every method; the specific ones above take precedence.
      router.use(
        path,
        defineEventHandler((event) => {
          (event.node.req as ObservedRequest).route = path;
          event.node.res.setHeader('allow', allow);
          throw new DomainError('METHOD_NOT_ALLOWED', `method ${event.method} is not allowed here; use ${allow}`);
        }),
      );
    }
    return router;
  }
}

/** Marks the request with its route pattern, for metrics and access lines (bounded, unlike raw paths). */
function labelled(path: string, handler: EventHandler): EventHandler {
  return defineEventHandler((event) => {
    (event.node.req as ObservedRequest).route = path;
    return handler(event);
  });
}
