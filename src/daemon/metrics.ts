import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How a delivery attempt ended: delivered, to be retried, or given up (dead letter). */
export type DeliveryOutcome = 'delivered' | 'retried' | 'dead_lettered';

/** What the domain reports; it knows nothing of Prometheus. */
export interface DomainMetrics {
  eventPublished(): void;
  deliveryAttempted(outcome: DeliveryOutcome, seconds: number): void;
}

export interface Metrics extends DomainMetrics {
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  webhookRequest(outcome: string): void;
  metricsRefused(): void;
  /** The Prometheus text exposition of everything, read live. */
  render(): Promise<{ contentType: string; text: string }>;
}

/** The daemon answers in about a millisecond; slow outliers go up to seconds. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Deliveries wait on subscribers over the network: up to the delivery timeout. */
const DELIVERY_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

interface HttpSeries {
  requests: { inc(): void };
  duration: { observe(value: number): void };
}

/**
 * One registry per daemon (not prom-client's global one), so that several
 * daemons in one process keep their own figures. Gauges read live values at
 * scrape time; counters cost a map lookup per request.
 */
export function createMetrics(live: { pendingDeliveries: () => number; deadLetters: () => number }): Metrics {
  const registers = [new Registry()];
  const [registry] = registers as [Registry];
  collectDefaultMetrics({ register: registry });

  const httpRequests = new Counter({
    name: 'platform_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'platform_http_request_duration_seconds',
    help: 'Time from the request to the end of the answer, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const published = new Counter({
    name: 'platform_events_published_total',
    help: 'Events recorded (from the API, webhooks and handlers)',
    registers,
  });
  const deliveries = new Counter({
    name: 'platform_deliveries_total',
    help: 'Delivery attempts, by outcome: delivered, retried, dead_lettered',
    labelNames: ['outcome'] as const,
    registers,
  });
  const deliveryDuration = new Histogram({
    name: 'platform_delivery_duration_seconds',
    help: 'Duration of one delivery attempt (a POST to a subscriber or an in-process handler run)',
    buckets: DELIVERY_BUCKETS,
    registers,
  });
  new Gauge({
    name: 'platform_deliveries_pending',
    help: 'Deliveries in the outbox (waiting, scheduled for a retry or in flight)',
    registers,
    collect() {
      this.set(live.pendingDeliveries());
    },
  });
  new Gauge({
    name: 'platform_dead_letters',
    help: 'Dead letters stored',
    registers,
    collect() {
      this.set(live.deadLetters());
    },
  });
  const webhooks = new Counter({
    name: 'platform_webhook_requests_total',
    help: 'Inbound webhook requests, by outcome',
    labelNames: ['outcome'] as const,
    registers,
  });
  const refused = new Counter({
    name: 'platform_metrics_refused_total',
    help: 'Scrapes of /metrics refused for a missing or wrong token',
    registers,
  });

  // Children are looked up once per (method, route, status): the label sets are bounded.
  const series = new Map<string, HttpSeries>();
  return {
    httpRequest(method, route, status, seconds) {
      const key = `${method} ${route} ${status}`;
      let found = series.get(key);
      if (found === undefined) {
        found = { requests: httpRequests.labels(method, route, String(status)), duration: httpDuration.labels(method, route) };
        series.set(key, found);
      }
      found.requests.inc();
      found.duration.observe(seconds);
    },
    webhookRequest: (outcome) => webhooks.labels(outcome).inc(),
    metricsRefused: () => refused.inc(),
    eventPublished: () => published.inc(),
    deliveryAttempted(outcome, seconds) {
      deliveries.labels(outcome).inc();
      deliveryDuration.observe(seconds);
    },
    async render() {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}
