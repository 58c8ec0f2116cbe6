/**
 * The BullMQ peer of bench/backlog.ts: one process, started by the bench on
 * the daemon's core, that does with BullMQ and Redis what one daemon does:
 * producers add a job per event (each add answered once Redis has it), and a
 * BullMQ worker POSTs each job's event JSON to the bench's subscriber, with
 * the job id as `webhook-id` so that the subscriber counts each job once. The
 * bench drives it over IPC (BullPeerCommand) and counts deliveries at its
 * subscriber, as it does for the daemon.
 *
 * Plain JavaScript, so that the repository typechecks where the bench's
 * optional devDependencies (bullmq, ioredis) are not installed; the commands
 * and answers are typed in bench/backlog.ts (BullPeerCommand, Produced).
 *
 * Environment: PEER_REDIS_PORT, PEER_SUBSCRIBER_URL.
 */
import { Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { postJson } from './post-json.mjs';

/** As the daemon's outgoing deliveries (PLATFORM_DELIVERY_CONCURRENCY, default 64). */
const CONCURRENCY = 64;
const QUEUE = 'deliveries';
/** addBulk takes this many jobs at a time while filling a backlog: one Redis round-trip each. */
const FILL_BATCH = 1000;

const connection = { host: '127.0.0.1', port: Number(process.env.PEER_REDIS_PORT), maxRetriesPerRequest: null };
const subscriberUrl = process.env.PEER_SUBSCRIBER_URL;
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, scheduling: 'lifo' });

/** The job: the event JSON, POSTed as the daemon delivers it; any answer but 2xx fails it. */
const deliver = (job) => postJson(subscriberUrl, agent, JSON.stringify(job.data), { 'webhook-id': String(job.id) });

// Completed jobs are removed, as graphile-worker deletes them: the daemon keeps a record of each
// delivery on disk, which Redis would have to hold in memory. Failed ones are kept, with retries.
const queue = new Queue(QUEUE, { connection, defaultJobOptions: { removeOnComplete: true, attempts: 5, backoff: { type: 'exponential', delay: 1000 } } });
const worker = new Worker(QUEUE, deliver, { connection, concurrency: CONCURRENCY, autorun: false });
worker.on('error', (error) => console.error(`bullmq worker: ${String(error)}`));
await queue.waitUntilReady();
await worker.waitUntilReady();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

/** One event, shaped as the daemon delivers it. */
function event(payload) {
  return { id: randomUUID(), eventKey: 'bench.tick', tenantId: 'bench', workspaceId: 'bench', actor: 'bench', payload, occurredAt: new Date().toISOString() };
}

async function produce(seconds, producers) {
  const latencies = [];
  let ok = 0;
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: producers }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        try {
          await queue.add('deliver', event({ dealId: 'D-1', amount: 1200, currency: 'EUR' }));
          latencies.push(performance.now() - started);
          ok += 1;
        } catch (error) {
          console.error(`add: ${String(error)}`);
          errors += 1;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { ok, errors, rps: Math.round(ok / seconds), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function fill(count, payloadBytes) {
  const text = 'x'.repeat(payloadBytes);
  const started = performance.now();
  for (let added = 0; added < count; added += FILL_BATCH) {
    const size = Math.min(FILL_BATCH, count - added);
    await queue.addBulk(Array.from({ length: size }, (_, i) => ({ name: 'deliver', data: event({ n: added + i, text }) })));
  }
  const seconds = (performance.now() - started) / 1000;
  return { ok: count, errors: 0, rps: Math.round(count / seconds), p50: NaN, p99: NaN };
}

process.on('message', (command) => {
  const answer = (value) => process.send(value);
  if (command.type === 'work') {
    void worker.run();
    answer({ working: true });
  } else if (command.type === 'produce') void produce(command.seconds, command.producers).then(answer);
  else if (command.type === 'fill') void fill(command.count, command.payloadBytes).then(answer);
  else
    void (async () => {
      await worker.close(true);
      await queue.close();
      agent.destroy();
      // Give ioredis a moment to end its sockets before the IPC channel goes.
      await sleep(50);
      process.disconnect();
    })();
});
process.send({ ready: true });
