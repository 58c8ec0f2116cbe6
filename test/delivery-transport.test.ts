import { createServer } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDeliveryTransport } from '../src/daemon/dispatch/transport.js';
import { closedPort } from './helpers/ports.js';

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

/** Names lowercased, as a record keeps them. */
function headersOf(raw: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let index = 0; index < raw.length; index += 2) headers[raw[index]!.toLowerCase()] = raw[index + 1]!;
  return headers;
}

test.run();
