import { createServer, type ServerResponse } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDeliveryTransport } from '../src/daemon/dispatch/transport.js';
import { closedPort } from './helpers/ports.js';
import { answerTenMegabytes } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

const transport = createDeliveryTransport({ deliveryConcurrency: 4, deliveryTimeoutMs: 5_000, denyPrivateTargets: false });

test.after(() => transport.close());

test('a subscriber that refuses the connection costs no body: it is made only once the connection is up', async () => {
  let made = 0;
  const port = await closedPort();
  const failed = await transport
    .post(`http://127.0.0.1:${port}/events`, {
      deliveryId: 'msg_refused',
      headers: {},
      body: async () => {
        made += 1;
        return { bytes: Buffer.from('{}'), headers: {} };
      },
      sent: () => assert.unreachable('no request was sent'),
    })
    .then(
      () => null,
      (error: NodeJS.ErrnoException) => error,
    );
  assert.is(failed?.code, 'ECONNREFUSED');
  assert.is(made, 0, 'the body was never made');
});

test('a subscriber that answers gets the body once, with the headers made from it', async () => {
  const received: Array<{ body: string; signature: string | undefined; length: string | undefined }> = [];
  const receivedHeaders: Array<Record<string, string>> = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString(), signature: request.headers['webhook-signature'] as string | undefined, length: request.headers['content-length'] });
      receivedHeaders.push(headersOf(request.rawHeaders));
      response.writeHead(202, { 'x-queue': 'main' }).end('queued');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  let made = 0;
  const sent: Array<Record<string, string>> = [];
  try {
    const answer = await transport.post(`http://user:pa%3Ass@127.0.0.1:${port}/events`, {
      deliveryId: 'msg_answered',
      headers: { 'content-type': 'application/json' },
      body: async () => {
        made += 1;
        return { bytes: Buffer.from('{"id":"e1"}'), headers: { 'webhook-signature': 'v1,made-from-the-body' } };
      },
      sent: (headers) => sent.push(headers),
    });
    assert.equal([answer.status, answer.retryAfter, answer.excerpt, answer.headers['x-queue']], [202, null, 'queued', 'main']);
    assert.is(made, 1);
    assert.equal(received, [{ body: '{"id":"e1"}', signature: 'v1,made-from-the-body', length: '11' }]);
    // Every header the subscriber received is reported, the credentials of the URL's Basic authentication masked.
    assert.equal(sent, [{ ...receivedHeaders[0], authorization: 'Basic ****' }]);
    assert.is(receivedHeaders[0]!.authorization, `Basic ${Buffer.from('user:pa:ss').toString('base64')}`);
    assert.is(receivedHeaders[0]!['webhook-id'], 'msg_answered');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a request whose answer never comes is still reported sent, once its head went out', async () => {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const impatient = createDeliveryTransport({ deliveryConcurrency: 1, deliveryTimeoutMs: 100, denyPrivateTargets: false });
  const sent: Array<Record<string, string>> = [];
  try {
    const failed = await impatient
      .post(`http://127.0.0.1:${port}/events`, {
        deliveryId: 'msg_unanswered',
        headers: { 'content-type': 'application/json' },
        body: async () => ({ bytes: Buffer.from('{}'), headers: {} }),
        sent: (headers) => sent.push(headers),
      })
      .then(
        () => null,
        (error: Error) => error,
      );
    assert.is(failed?.name, 'TimeoutError');
    assert.is(sent.length, 1);
    assert.equal([sent[0]!['webhook-id'], sent[0]!['content-length']], ['msg_unanswered', '2']);
  } finally {
    impatient.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A subscriber answering every request with `answer`, and what became of each connection. */
async function subscriber(answer: (response: ServerResponse) => void): Promise<{ url: string; closedEarly: () => number; close: () => Promise<void> }> {
  let closedEarly = 0;
  const server = createServer((request, response) => {
    request.resume();
    response.on('close', () => {
      if (!response.writableFinished) closedEarly += 1;
    });
    request.on('end', () => answer(response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/events`,
    closedEarly: () => closedEarly,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const request = (deliveryId: string) => ({ deliveryId, headers: {}, body: async () => ({ bytes: Buffer.from('{}'), headers: {} }), sent: () => undefined });
const failureOf = (attempt: Promise<unknown>) =>
  attempt.then(
    () => null,
    (error: Error) => error,
  );

test('an answer is its status, its first Retry-After, its headers in order (repeated ones joined) and its first 2 KiB', async () => {
  const server = await subscriber((response) => {
    response.writeHead(503, [
      ['Retry-After', '120'],
      ['X-Trace', 'a'],
      ['Content-Type', 'text/plain'],
      ['x-trace', 'b'],
    ]);
    response.end('é'.repeat(3000));
  });
  try {
    const answer = await transport.post(server.url, request('msg_busy'));
    assert.is(answer.status, 503);
    assert.is(answer.retryAfter, '120');
    assert.equal(Object.entries(answer.headers).slice(0, 3), [
      ['retry-after', '120'],
      ['x-trace', 'a, b'],
      ['content-type', 'text/plain'],
    ]);
    assert.is(Buffer.byteLength(answer.excerpt!), 2048, 'the first 2 KiB, decoded');
  } finally {
    await server.close();
  }
});

test('an answer longer than 64 KiB is taken as far as it came, and its connection dropped rather than read to the end', async () => {
  const server = await subscriber((response) => answerTenMegabytes(response));
  try {
    const answer = await transport.post(server.url, request('msg_long'));
    assert.equal([answer.status, answer.excerpt?.length], [200, 2048]);
    await waitFor('the connection dropped by the daemon', () => server.closedEarly() === 1);
  } finally {
    await server.close();
  }
});

test('an answer cut short by the subscriber after its status is what came; one without a status is an error', async () => {
  const partial = await subscriber((response) => {
    response.writeHead(200, { 'content-length': '1000' });
    response.write('{"partial":');
    setTimeout(() => response.socket?.destroy(), 5);
  });
  const silent = await subscriber((response) => response.socket?.destroy());
  try {
    const answer = await transport.post(partial.url, request('msg_partial'));
    assert.equal([answer.status, answer.excerpt], [200, '{"partial":']);
    const failed = await failureOf(transport.post(silent.url, request('msg_silent')));
    assert.ok(failed && failed.name !== 'TimeoutError', `failed with the connection's error (${failed?.message})`);
  } finally {
    await partial.close();
    await silent.close();
  }
});

test('a status outside 200-599 is not an answer', async () => {
  const server = await subscriber((response) => response.writeHead(600).end('?'));
  try {
    const failed = await failureOf(transport.post(server.url, request('msg_odd')));
    assert.is(failed?.message, 'invalid HTTP status 600');
  } finally {
    await server.close();
  }
});

test('a delivery abandoned while its answer is awaited fails at once with the lost lease, and its connection is dropped', async () => {
  const server = await subscriber(() => undefined);
  try {
    let sent!: () => void;
    const headSent = new Promise<void>((resolve) => (sent = resolve));
    const attempt = failureOf(transport.post(server.url, { ...request('msg_abandoned'), sent: () => sent() }));
    await headSent;
    transport.abandon('msg_abandoned');
    assert.is((await attempt)?.name, 'LeaseLostError');
    await waitFor('the connection dropped', () => server.closedEarly() === 1);
  } finally {
    await server.close();
  }
});

/** Names lowercased, as a record keeps them. */
function headersOf(raw: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let index = 0; index < raw.length; index += 2) headers[raw[index]!.toLowerCase()] = raw[index + 1]!;
  return headers;
}

test.run();
