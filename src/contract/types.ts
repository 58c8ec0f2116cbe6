/**
 * Response shapes of the HTTP API (docs/api.md), for clients: the types of
 * the schemas in resources.ts, which the API document is generated from, and
 * of the live streams' items. Node-free, so the web console can import it; the daemon's own records live
 * in its domain code.
 */

export interface Envelope<T> {
  code: string;
  message: string | null;
  data: T;
  meta: Record<string, unknown> | null;
  timestamp: string;
}

/** Every resource's type (each schema's InferOutput), by the schema's name. */
export type * from './resources.js';
