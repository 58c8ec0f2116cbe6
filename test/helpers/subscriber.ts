import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './wait.js';

export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body as received. */
  body: string;
  json: any;
  /** What the subscriber answered; undefined while it hangs. */
  status?: number;
  /** The sender closed the connection before the answer (it stopped or was killed mid-attempt). */
  abandoned?: boolean;
  /** performance.now() when the request began to arrive, and when its exchange ended (answered or cut): to tell apart attempts that overlapped. */
  arrivedAt: number;
  closedAt?: number;
  /** The sender's port: which process sent it, where the test can tell (see multi-daemon-deliveries). */
  remotePort?: number;
}

/** What to answer the n-th request (0-based): a status (default 200), headers, a body (default `{}`), after a delay, or never answer. */
export type Answer = { status?: number; headers?: Record<string, string>; body?: string; hang?: boolean; delayMs?: number };

export interface Subscriber {
  url: string;
  received: ReceivedDelivery[];
  /** Event ids of the deliveries answered with a 2xx. */
  deliveredEventIds(): Set<string>;
  /** Requests being answered now, at most at once so far, and the delivery ids (webhook-id) that had two attempts in flight at once. */
  concurrency: { now: number; most: number; overlapping: Set<string> };
  /** Changes the answers from now on. */
  answer(script: (request: ReceivedDelivery, index: number) => Answer): void;
  waitForCount(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

/** Subscribers a test file starts as it goes (`start`), closed together at its end (`closeAll`). */
export function subscriberPool() {
  const started: Subscriber[] = [];
  return {
    async start(...args: Parameters<typeof startSubscriber>): Promise<Subscriber> {
      const subscriber = await startSubscriber(...args);
      started.push(subscriber);
      return subscriber;
    },
    async closeAll(): Promise<void> {
      for (const subscriber of started.splice(0)) await subscriber.close();
    },
  };
}

/** A real external service on a local port: it records every delivery and answers as scripted. */
export async function startSubscriber(script: (request: ReceivedDelivery, index: number) => Answer = () => ({})): Promise<Subscriber> {
  let current = script;
  const received: ReceivedDelivery[] = [];
  const hanging = new Set<ServerResponse>();
  const concurrency = { now: 0, most: 0, overlapping: new Set<string>() };
  const inFlight = new Set<string>();
  const server = createServer((req, res) => {
    // Counted from the request's arrival until the answer is written or the sender goes away.
    const deliveryId = String(req.headers['webhook-id']);
    const arrivedAt = performance.now();
    const remotePort = req.socket.remotePort;
    if (inFlight.has(deliveryId)) concurrency.overlapping.add(deliveryId);
    inFlight.add(deliveryId);
    concurrency.now += 1;
    concurrency.most = Math.max(concurrency.most, concurrency.now);
    let delivery: ReceivedDelivery | undefined;
    res.on('close', () => {
      inFlight.delete(deliveryId);
      concurrency.now -= 1;
      if (delivery) delivery.closedAt = performance.now();
      if (!res.writableFinished && delivery) delivery.abandoned = true;
    });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const arrived: ReceivedDelivery = { path: req.url ?? '', headers: req.headers, body, json: safeJson(body), arrivedAt, remotePort };
      delivery = arrived;
      const index = received.length;
      received.push(arrived);
      const answer = current(arrived, index);
      if (answer.hang) {
        hanging.add(res);
        return;
      }
      const respond = () => {
        if (res.destroyed) return;
        arrived.status = answer.status ?? 200;
        res.writeHead(arrived.status, answer.headers ?? {});
        res.end(answer.body ?? '{}');
      };
      if (answer.delayMs) setTimeout(respond, answer.delayMs);
      else respond();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    concurrency,
    deliveredEventIds: () =>
      new Set(received.filter((d) => d.status !== undefined && d.status < 300 && d.json).map((d) => d.json.id as string)),
    answer(next) {
      current = next;
    },
    waitForCount: (count, timeoutMs = 10_000) =>
      waitFor(`${count} deliveries (have ${received.length})`, () => received.length >= count && received, timeoutMs),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function safeJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Verifies a delivery the way a receiver following Standard Webhooks would,
 * written independently of the daemon's signing code.
 */
export function hasValidSignature(delivery: ReceivedDelivery, signingSecret: string): boolean {
  const id = delivery.headers['webhook-id'];
  const timestamp = delivery.headers['webhook-timestamp'];
  const signatures = delivery.headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  const key = Buffer.from(signingSecret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${delivery.body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** Answers 200 with 10 MB of body, written as fast as the client reads it: far more than the daemon reads of an answer. */
export function answerTenMegabytes(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let sent = 0;
  const send = () => {
    while (sent < 10 * 1024 * 1024) {
      sent += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', send);
    }
    response.end();
  };
  send();
}
