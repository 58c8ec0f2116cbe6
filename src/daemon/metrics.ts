import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { JobOutcome } from './jobs.js';

/** How a delivery attempt ended: delivered, to be retried, or given up (dead letter). */
export type DeliveryOutcome = 'delivered' | 'retried' | 'dead_lettered';

/** What the domain reports; it knows nothing of Prometheus. */
export interface DomainMetrics {
  eventPublished(): void;
  deliveryAttempted(outcome: DeliveryOutcome, seconds: number): void;
}

export interface Metrics extends DomainMetrics {
  jobRan(jobName: string, outcome: JobOutcome): void;
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

/**
 * Methods with a label of their own. Node accepts about 30 more (PROPFIND,
 * PURGE, M-SEARCH…), which anyone may send: each would add a series to every
 * route it hits, so they share one label.
 */
const LABELLED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const OTHER_METHOD = 'OTHER';

/** Per (method, route): the histogram of durations, counted by hand (see httpMetrics), and its statuses. */
interface DurationSeries {
  method: string;
  route: string;
  /** Non-cumulative counts per bucket; the last slot is +Inf. */
  buckets: Float64Array;
  sum: number;
  count: number;
  /** Requests answered, by status. */
  statuses: Map<number, number>;
}

type MetricValue = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * HTTP requests are counted on every answer, so this path is kept to three
 * map lookups and a few additions: prom-client's labelled children hash their
 * labels on every call (a child from labels() too), which showed in the
 * benchmark. The lookups go route, method, status: the route pattern and the
 * method are the same string objects on every request (the route table's
 * constants, Node's method names), whose hashes V8 keeps, so no key is built
 * per request. The figures are turned into prom-client's metric shape only
 * when scraped.
 */
function httpMetrics(registry: Registry) {
  const byRoute = new Map<string, Map<string, DurationSeries>>();
  const allSeries = () => [...byRoute.values()].flatMap((byMethod) => [...byMethod.values()]);
  const seriesOf = (method: string, route: string): DurationSeries => {
    let byMethod = byRoute.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      byRoute.set(route, byMethod);
    }
    let series = byMethod.get(method);
    if (series === undefined) {
      series = { method, route, buckets: new Float64Array(HTTP_BUCKETS.length + 1), sum: 0, count: 0, statuses: new Map() };
      byMethod.set(method, series);
    }
    return series;
  };
  registry.registerMetric({
    name: 'platform_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    type: 'counter',
    get: async () => ({
      name: 'platform_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      type: 'counter',
      aggregator: 'sum',
      values: allSeries().flatMap((series) =>
        [...series.statuses].map(
          ([status, count]): MetricValue => ({ labels: { method: series.method, route: series.route, status: String(status) }, value: count }),
        ),
      ),
    }),
  } as never);
  registry.registerMetric({
    name: 'platform_http_request_duration_seconds',
    help: 'Time from the request to the end of the answer, by method and route pattern',
    type: 'histogram',
    get: async () => ({
      name: 'platform_http_request_duration_seconds',
      help: 'Time from the request to the end of the answer, by method and route pattern',
      type: 'histogram',
      aggregator: 'sum',
      values: allSeries().flatMap((series): MetricValue[] => {
        const labels = { method: series.method, route: series.route };
        let cumulative = 0;
        const buckets = [...HTTP_BUCKETS, '+Inf' as const].map((bound, index): MetricValue => {
          cumulative += series.buckets[index]!;
          return { metricName: 'platform_http_request_duration_seconds_bucket', labels: { le: bound, ...labels }, value: cumulative };
        });
        return [
          ...buckets,
          { metricName: 'platform_http_request_duration_seconds_sum', labels, value: series.sum },
          { metricName: 'platform_http_request_duration_seconds_count', labels, value: series.count },
        ];
      }),
    }),
  } as never);

  return (method: string, route: string, status: number, seconds: number) => {
    const series = seriesOf(LABELLED_METHODS.has(method) ? method : OTHER_METHOD, route);
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < HTTP_BUCKETS.length && seconds > HTTP_BUCKETS[bucket]!) bucket += 1;
    series.buckets[bucket] = series.buckets[bucket]! + 1;
    series.sum += seconds;
    series.count += 1;
  };
}

/**
 * One registry per daemon (not prom-client's global one), so that several
 * daemons in one process keep their own figures. Gauges read live values at
 * scrape time; counters cost a map lookup per request.
 */
export function createMetrics(live: { pendingDeliveries: () => Promise<number>; deadLetters: () => Promise<number> }): Metrics {
  const registers = [new Registry()];
  const [registry] = registers as [Registry];
  collectDefaultMetrics({ register: registry });

  const httpRequest = httpMetrics(registry);
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
    async collect() {
      this.set(await live.pendingDeliveries());
    },
  });
  new Gauge({
    name: 'platform_dead_letters',
    help: 'Dead letters stored',
    registers,
    async collect() {
      this.set(await live.deadLetters());
    },
  });
  const webhooks = new Counter({
    name: 'platform_webhook_requests_total',
    help: 'Inbound webhook requests, by outcome',
    labelNames: ['outcome'] as const,
    registers,
  });
  const jobRuns = new Counter({
    name: 'platform_job_runs_total',
    help: 'Scheduled job runs, by job and outcome: succeeded, failed, skipped (another daemon was running it)',
    labelNames: ['job', 'outcome'] as const,
    registers,
  });
  const refused = new Counter({
    name: 'platform_metrics_refused_total',
    help: 'Scrapes of /metrics refused for a missing or wrong token',
    registers,
  });

  return {
    httpRequest,
    webhookRequest: (outcome) => webhooks.labels(outcome).inc(),
    metricsRefused: () => refused.inc(),
    jobRan: (jobName, outcome) => jobRuns.labels(jobName, outcome).inc(),
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
