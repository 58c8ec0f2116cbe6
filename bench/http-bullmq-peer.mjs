/**
 * The HTTP + BullMQ peer of bench/http-peer.ts: the service a team would
 * build instead of the platform, doing the same work per event. A node:http
 * server (no framework) takes `POST /api/workspaces/{id}/events/publish`,
 * verifies the bearer JWT (HS256, jose), validates the body (valibot, the
 * platform's own rules for an event key and a payload object), adds a job to
 * BullMQ and answers once Redis has it; a BullMQ worker (concurrency 50)
 * POSTs each job's event to the subscriber, signed as Standard Webhooks sign
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<HMAC-SHA256>`).
 * Redis runs with its append-only file synced every second.
 *
 * Plain JavaScript, as bench/bullmq-peer.mjs, so that the repository
 * typechecks where the bench's optional devDependencies are missing.
 *
 * Environment: PEER_REDIS_PORT, PEER_SUBSCRIBER_URL, PEER_JWT_SECRET,
 * PEER_SIGNING_SECRET (base64). Its first IPC message is `{ url }`; it stops
 * on `{ type: 'stop' }`.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { Agent, createServer } from 'node:http';
import { Queue, Worker } from 'bullmq';
import { jwtVerify } from 'jose';
import * as v from 'valibot';
import { postJson } from './post-json.mjs';

const CONCURRENCY = 50;
const MAX_BODY_BYTES = 1024 * 1024;
const QUEUE = 'events';

const connection = { host: '127.0.0.1', port: Number(process.env.PEER_REDIS_PORT), maxRetriesPerRequest: null };
const subscriberUrl = process.env.PEER_SUBSCRIBER_URL;
const jwtSecret = new TextEncoder().encode(process.env.PEER_JWT_SECRET);
const signingKey = Buffer.from(process.env.PEER_SIGNING_SECRET, 'base64');
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, scheduling: 'lifo' });

const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const PublishBody = v.strictObject({
  eventKey: v.pipe(v.string(), v.maxLength(255), v.regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/)),
  payload: v.optional(v.custom(isObject)),
});

const queue = new Queue(QUEUE, { connection, defaultJobOptions: { removeOnComplete: true, attempts: 5, backoff: { type: 'exponential', delay: 1000 } } });
const worker = new Worker(
  QUEUE,
  (job) => {
    const body = JSON.stringify(job.data);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', signingKey).update(`${job.id}.${timestamp}.${body}`).digest('base64');
    return postJson(subscriberUrl, agent, body, { 'webhook-id': String(job.id), 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` });
  },
  { connection, concurrency: CONCURRENCY },
);
worker.on('error', (error) => console.error(`bullmq worker: ${String(error)}`));
await queue.waitUntilReady();
await worker.waitUntilReady();

const answer = (res, status, body) => {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
};
const refuse = (res, status, message) => answer(res, status, { code: 'ERROR', message, data: null, meta: null });

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let bytes = 0;
    req.on('data', (chunk) => {
      bytes += chunk.length;
      if (bytes > MAX_BODY_BYTES) reject(new Error('too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const PUBLISH = /^\/api\/workspaces\/([a-z][a-z0-9-]{1,63})\/events\/publish$/;

const server = createServer(async (req, res) => {
  const route = PUBLISH.exec(req.url ?? '');
  if (req.method !== 'POST' || !route) return refuse(res, 404, 'not found');
  const header = req.headers.authorization ?? '';
  let subject;
  try {
    ({ payload: { sub: subject } } = await jwtVerify(header.slice(7), jwtSecret, { algorithms: ['HS256'] }));
  } catch {
    return refuse(res, 401, 'authentication required');
  }
  let input;
  try {
    input = v.parse(PublishBody, JSON.parse((await readBody(req)).toString('utf8')));
  } catch (error) {
    return refuse(res, 400, String(error));
  }
  const event = {
    id: randomUUID(),
    eventKey: input.eventKey,
    tenantId: route[1],
    actor: String(subject),
    payload: input.payload ?? {},
    occurredAt: new Date().toISOString(),
  };
  try {
    await queue.add('deliver', event, { jobId: event.id });
  } catch (error) {
    return refuse(res, 503, String(error));
  }
  answer(res, 200, { code: 'SUCCESS', message: null, data: null, meta: { eventId: event.id } });
});
server.keepAliveTimeout = 60_000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

process.on('message', (command) => {
  if (command.type !== 'stop') return;
  void (async () => {
    server.close();
    server.closeAllConnections();
    await worker.close(true);
    await queue.close();
    agent.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.disconnect();
  })();
});
process.send({ url: `http://127.0.0.1:${server.address().port}` });
