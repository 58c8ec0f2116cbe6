export interface RetentionPolicy {
  maxAgeMs: number;
  maxPerWorkspace: number;
}

export interface EventPageQuery {
  eventKey?: string | undefined;
  /** Epoch ms, inclusive. */
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  /** The last event of the previous page: its segment, occurredAt (ms) and id. */
  before?: EventPosition | undefined;
}

export interface EventPosition {
  segment: number;
  at: number;
  id: string;
}
