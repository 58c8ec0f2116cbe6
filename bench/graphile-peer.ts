/**
 * The graphile-worker peer of bench/postgres.ts: one process, started by the
 * bench on the daemon's core, that does what one daemon does in scenario 4 on
 * PostgreSQL: producers add a job per event, each in its own transaction, and
 * a graphile-worker runner POSTs each job's event JSON to the bench's
 * subscriber. The bench drives it over IPC (PeerCommand) and counts
 * deliveries at its subscriber, as it does for the daemon.
 *
 * Environment: PEER_DATABASE_URL, PEER_SUBSCRIBER_URL.
 */
import { Agent } from 'node:http';
import { postJson } from './post-json.mjs';
import { randomUUID } from 'node:crypto';
import { Logger, makeWorkerUtils, run, runMigrations, type Task } from 'graphile-worker';

/** What the bench asks for: `produce` as fast as `producers` allow, `paced` at `rate` jobs/s. */
export type PeerCommand =
  | { type: 'produce'; seconds: number; producers: number }
  | { type: 'paced'; seconds: number; rate: number }
  | { type: 'stop' };

/** Jobs added (committed), refused, and how long each add took (ms), as autocannon reports a publish. */
export interface Produced {
  ok: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

/** As the daemon's outgoing deliveries (PLATFORM_DELIVERY_CONCURRENCY, default 64). */
const CONCURRENCY = 64;
/** One connection per producer, so that 50 producers run 50 transactions at once as 50 publishing connections do. */
const PRODUCER_POOL = 50;
/** As scenario 5's autocannon connections. */
const PACED_ADDERS = 20;

const databaseUrl = process.env.PEER_DATABASE_URL!;
const subscriberUrl = process.env.PEER_SUBSCRIBER_URL!;
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, scheduling: 'lifo' });

/** The job: the event JSON, POSTed as the daemon delivers it; any answer but 2xx fails it, and graphile-worker retries. */
const deliver: Task = (payload) => postJson(subscriberUrl, agent, JSON.stringify(payload));

// Warnings and errors only: logging every completed job (its default) is work the daemon does not do.
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`);
});

// Its documented high-throughput configuration (worker.graphile.org/docs/performance): jobs
// fetched 500 at a time into a local queue and completions batched, with the daemon's concurrency.
// pollInterval stays at its default: new jobs wake the runner through LISTEN/NOTIFY, polling only
// finds scheduled and retried ones, of which this bench has none.
const preset = {
  worker: {
    connectionString: databaseUrl,
    concurrentJobs: CONCURRENCY,
    maxPoolSize: CONCURRENCY + 2,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    logger,
  },
};

await runMigrations({ preset, taskList: { deliver } });
const runner = await run({ preset, taskList: { deliver }, noHandleSignals: true });
const utils = await makeWorkerUtils({ preset: { worker: { connectionString: databaseUrl, maxPoolSize: PRODUCER_POOL, logger } } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);

function summary(ok: number, errors: number, seconds: number, latencies: number[]): Produced {
  latencies.sort((a, b) => a - b);
  return { ok, errors, rps: Math.round(ok / seconds), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/** One event, shaped as the daemon delivers it; `sentAt` (when it is added) lets the subscriber time it. */
function event(payload: Record<string, unknown>) {
  return { id: randomUUID(), eventKey: 'bench.tick', tenantId: 'bench', workspaceId: 'bench', actor: 'bench', payload, occurredAt: new Date().toISOString() };
}

async function addTimed(payload: Record<string, unknown>, latencies: number[]): Promise<boolean> {
  const started = performance.now();
  try {
    await utils.addJob('deliver', event(payload));
    latencies.push(performance.now() - started);
    return true;
  } catch (error) {
    console.error(`addJob: ${String(error)}`);
    return false;
  }
}

async function produce(seconds: number, producers: number): Promise<Produced> {
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: producers }, async () => {
      while (performance.now() < deadline) {
        if (await addTimed({ dealId: 'D-1', amount: 1200, currency: 'EUR' }, latencies)) ok += 1;
        else errors += 1;
      }
    }),
  );
  return summary(ok, errors, seconds, latencies);
}

/**
 * `rate` adds a second for `seconds` from 20 adders, as scenario 5 publishes
 * from 20 connections: each add starts at its time, or as soon as an adder is
 * free when all are busy, and `sentAt` is stamped as it starts; none starts
 * after `seconds`. So a peer that cannot keep up shows a lower rate, as it
 * does under autocannon, rather than a growing backlog.
 */
async function paced(seconds: number, rate: number): Promise<Produced> {
  const latencies: number[] = [];
  let next = 0;
  let ok = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: PACED_ADDERS }, async () => {
      for (;;) {
        const dueAt = started + (next / rate) * 1000;
        if (dueAt >= deadline) return;
        next += 1;
        if (dueAt > performance.now()) await sleep(dueAt - performance.now());
        if (performance.now() >= deadline) return;
        if (await addTimed({ sentAt: Date.now(), dealId: 'D-2' }, latencies)) ok += 1;
        else errors += 1;
      }
    }),
  );
  return summary(ok, errors, seconds, latencies);
}

process.on('message', (command: PeerCommand) => {
  const answer = (value: unknown) => process.send!(value);
  if (command.type === 'produce') void produce(command.seconds, command.producers).then(answer);
  else if (command.type === 'paced') void paced(command.seconds, command.rate).then(answer);
  else
    void (async () => {
      await utils.release();
      await runner.stop();
      agent.destroy();
      process.disconnect();
    })();
});
process.send!({ ready: true });
