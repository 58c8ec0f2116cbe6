import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createWorkspace } from '../helpers/fixtures.js';
import { spawnDaemon } from '../helpers/cli.js';
import { call } from '../helpers/http.js';
import { rssMb } from '../helpers/memory.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';


/** Sends a raw HTTP request and collects whatever comes back until the server closes. */
function rawExchange(url: string, text: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', () => undefined);
  });
}

const envelopeOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

test('a 1 GiB upload is answered 413 at the limit, and never buffered', async () => {
  const daemon = await spawnDaemon(await tempDir(), { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password });
  try {
    const pid = daemon.child.pid!;
    const before = rssMb(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50);
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    let sentMb = 0;
    const status = await new Promise<number>((resolve, reject) => {
      const upload = request(`${daemon.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      upload.on('error', () => undefined);
      const pump = () => {
        while (sentMb < 1024) {
          sentMb += 1;
          if (!upload.write(chunk)) return void upload.once('drain', pump);
        }
        upload.end();
      };
      upload.once('error', (error) => (sentMb < 1024 ? undefined : reject(error)));
      pump();
    });
    clearInterval(sampler);
    assert.is(status, 413);
    assert.ok(peak - before < 64, `RSS grew by ${(peak - before).toFixed(0)} MB while ${sentMb} MB were offered`);
    console.log(`  (1 GiB offered, ${sentMb} MB sent before the cut; daemon RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MB)`);
    assert.is((await call(daemon.url, 'GET', '/api/health')).status, 200, 'the daemon keeps serving');
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test('500 slowloris connections do not stop other clients from being served', async () => {
  const t = await startTestDaemon();
  const sockets: Socket[] = [];
  try {
    const { port } = new URL(t.url);
    for (let i = 0; i < 500; i += 1) {
      // From ten addresses, each under the per-client cap, which would otherwise refuse most of them.
      const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress: `127.0.1.${1 + (i % 10)}` });
      socket.on('error', () => undefined);
      socket.write('GET /api/health HTTP/1.1\r\nHost: slow\r\n');
      sockets.push(socket);
    }
    // Keep them trickling a header now and then, never finishing the request.
    const trickle = setInterval(() => {
      for (const socket of sockets) if (!socket.destroyed) socket.write(`X-Slow-${Math.random().toString(36).slice(2)}: 1\r\n`);
    }, 200);
    await waitFor('the slow connections to be open', () => sockets.every((socket) => !socket.connecting));
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => call(t.url, 'GET', '/api/health')));
      for (const answer of answers) assert.is(answer.status, 200);
      const login = await t.anon.post('/api/auth/login', ADMIN);
      assert.is(login.status, 200);
    } finally {
      clearInterval(trickle);
    }
  } finally {
    for (const socket of sockets) socket.destroy();
    await t.destroy();
  }
});

interface RawConnection {
  socket: Socket;
  /** Everything the daemon sent so far. */
  received: () => string;
  isClosed: () => boolean;
  closed: Promise<void>;
}

/**
 * A raw connection to the daemon from `localAddress` (Linux routes all of 127/8
 * to lo). `ignoresClose`: like a hostile client, it does not close its side
 * when the daemon closes its own (a Node socket would by default).
 */
function openConnection(url: string, localAddress = '127.0.0.1', ignoresClose = false): RawConnection {
  const socket = connect({ port: Number(new URL(url).port), host: '127.0.0.1', localAddress, allowHalfOpen: ignoresClose });
  let received = '';
  let isClosed = false;
  socket.on('data', (chunk) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve(void (isClosed = true))));
  return { socket, received: () => received, isClosed: () => isClosed, closed };
}

const HEALTH = 'GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n';

/** One request on a fresh connection from `localAddress`: its status, or 0 when the connection was closed unanswered. */
async function statusFrom(url: string, localAddress: string): Promise<number> {
  const connection = openConnection(url, localAddress);
  connection.socket.write(`${HEALTH}Connection: close\r\n\r\n`);
  await connection.closed;
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(connection.received())?.[1] ?? 0);
}

/** A connection that was served once (so the daemon surely counts it), then held open with a request it never finishes. */
async function heldConnection(url: string, localAddress: string): Promise<RawConnection> {
  const connection = openConnection(url, localAddress);
  connection.socket.write(`${HEALTH}\r\n`);
  await waitFor(`an answer on a connection from ${localAddress}`, () => connection.received().includes('"timestamp"') || connection.isClosed());
  assert.match(connection.received(), /^HTTP\/1\.1 200 /);
  connection.socket.write(HEALTH);
  return connection;
}

/** The access line of the request sent with this X-Request-Id, once written. */
const accessLine = (t: TestDaemon, requestId: string) => t.logs.join('').split('\n').find((line) => line.endsWith(` ${requestId}`));
const statusOfLine = (line: string) => Number(line.split(' ')[3]);

/** The Prometheus text of /metrics, as an ADMIN reads it. */
const scrape = async (t: TestDaemon) =>
  (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${(await t.admin()).token}` } })).text();

const SHORT_LIMITS = { headersTimeoutMs: 300, requestTimeoutMs: 600, unreadAnswerTimeoutMs: 600, maxTotal: 1024, maxPerClient: 64 };

test('dribbled headers, a dribbled body and blank lines between requests are cut while they still dribble; others are served', async () => {
  const t = await startTestDaemon({ connections: SHORT_LIMITS });
  // Clients that keep their side open when the daemon closes its own: only the daemon ends these connections.
  const header = openConnection(t.url, '127.0.0.1', true);
  const body = openConnection(t.url, '127.0.0.1', true);
  const blankLines = openConnection(t.url, '127.0.0.1', true);
  const dribbling = [header, body, blankLines];
  // One byte every 50 ms for as long as the connections stay open: none of them would ever end on its own.
  const dribble = setInterval(() => {
    for (const connection of dribbling) {
      if (connection.isClosed()) continue;
      connection.socket.write(connection === blankLines ? '\r\n' : 'a');
    }
  }, 50);
  try {
    header.socket.write(`${HEALTH}X-Slow: `);
    body.socket.write('POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: dribbled-body\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"');
    // Blank lines begin no request: they used to hold a kept-alive connection open indefinitely.
    blankLines.socket.write(`${HEALTH}\r\n`);
    assert.is((await call(t.url, 'GET', '/api/health')).status, 200, 'a normal client is served meanwhile');
    // They dribble until closed, so only the daemon can close them. Generous: the limits are 300 and 600 ms.
    await waitFor('every dribbling connection to be closed by the daemon', () => dribbling.every((connection) => connection.isClosed()), 15_000);
    for (const connection of [header, body]) {
      assert.match(connection.received(), /^HTTP\/1\.1 408 /);
      assert.is(envelopeOf(connection.received()).code, 'VALIDATION_ERROR');
    }
    assert.match(blankLines.received(), /^HTTP\/1\.1 200 /, 'the first request on the kept-alive connection was answered');
    const line = await waitFor('the access line of the dribbled body', () => accessLine(t, 'dribbled-body'));
    assert.is(statusOfLine(line), 408);
    assert.is((await call(t.url, 'GET', '/api/health')).status, 200);
    assert.not.match(t.logs.join(''), 'error:');
  } finally {
    clearInterval(dribble);
    for (const connection of dribbling) connection.socket.destroy();
    await t.destroy();
  }
});

test('a pipelined request still arriving is no idle connection: the sweep leaves it to be answered', async () => {
  const t = await startTestDaemon({ connections: SHORT_LIMITS });
  const connection = openConnection(t.url);
  const body = JSON.stringify({ email: ADMIN.email, password: 'not-the-password' });
  try {
    // Two requests in one write: the second's headers are complete, its body comes later.
    connection.socket.write(`${HEALTH}\r\nPOST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    await waitFor('the first answer', () => /^HTTP\/1\.1 200 /.test(connection.received()));
    // Longer than the 300 ms a connection may stay idle after an answer, within the 600 ms the second request may take.
    await new Promise((resolve) => setTimeout(resolve, 420));
    assert.not.ok(connection.isClosed(), 'the connection is busy with the second request, not idle');
    connection.socket.write(body.slice(5));
    await waitFor('the second answer', () => (connection.received().match(/HTTP\/1\.1 \d{3} /g) ?? []).length === 2);
    assert.equal(connection.received().match(/HTTP\/1\.1 \d{3}/g), ['HTTP/1.1 200', 'HTTP/1.1 401']);
  } finally {
    connection.socket.destroy();
    await t.destroy();
  }
});

test('an answer the client stops reading is abandoned after the limit and counted as 400; others are served', async () => {
  // Pages of up to 32 MiB, so that one answer can outgrow the kernel's socket buffers.
  const t = await startTestDaemon({ connections: SHORT_LIMITS, maxPayloadBytes: 1024 * 1024, maxBodyBytes: 2 * 1024 * 1024, maxPageBytes: 32 * 1024 * 1024 });
  const admin = await t.admin();
  await createWorkspace(admin, 'big');
  // 16 MiB of answer: far more than the kernel's socket buffers take (4 MiB at most here) when nobody reads.
  const payload = { blob: 'x'.repeat(1024 * 1024 - 100) };
  for (let i = 0; i < 16; i += 1) assert.is((await admin.post('/api/workspaces/big/events/publish', { eventKey: 'big.blob', payload })).status, 200);

  const reader = openConnection(t.url);
  reader.socket.pause();
  reader.socket.write(`GET /api/workspaces/big/events?limit=1000 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin.token}\r\nX-Request-Id: never-read\r\n\r\n`);
  try {
    // The access line is written when the daemon lets go of the answer: never, while it kept it.
    const line = await waitFor('the daemon to abandon the unread answer', () => accessLine(t, 'never-read'), 15_000);
    assert.is(statusOfLine(line), 400);
    assert.is((await call(t.url, 'GET', '/api/health')).status, 200, 'others are served');
    reader.socket.resume();
    await waitFor('the abandoned connection to end', () => reader.isClosed(), 15_000);
    const received = Buffer.byteLength(reader.received());
    const declared = Number(/content-length: (\d+)/i.exec(reader.received())![1]);
    assert.ok(received < declared, `the answer was cut (${received} of ${declared} bytes)`);
    assert.match(await scrape(t), 'platform_http_requests_total{method="GET",route="/api/workspaces/:id/events",status="400"} 1');
  } finally {
    reader.socket.destroy();
    await t.destroy();
  }
});

test('an upload the client abandons is logged and counted as 400; a live stream its client closes is not', async () => {
  const t = await startTestDaemon();
  const upload = openConnection(t.url);
  const stream = openConnection(t.url);
  try {
    // Expect: 100-continue makes Node say when the request has reached the daemon's handler.
    upload.socket.write('POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: left-midway\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n');
    await waitFor('the daemon to take the request', () => upload.received().startsWith('HTTP/1.1 100 Continue'));
    upload.socket.write('{"email":');
    upload.socket.destroy();
    const line = await waitFor('the access line of the abandoned upload', () => accessLine(t, 'left-midway'));
    assert.is(statusOfLine(line), 400);
    assert.match(await scrape(t), 'platform_http_requests_total{method="POST",route="/api/auth/login",status="400"} 1');

    // A stream has no end of its own: its client leaving is how it ends.
    stream.socket.write(`GET /api/admin/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${(await t.admin()).token}\r\nX-Request-Id: stream-left\r\n\r\n`);
    await waitFor('the stream to start', () => stream.received().includes(': connected'));
    stream.socket.destroy();
    assert.is(statusOfLine(await waitFor('the access line of the stream', () => accessLine(t, 'stream-left'))), 200);
  } finally {
    stream.socket.destroy();
    upload.socket.destroy();
    await t.destroy();
  }
});

test('connections are capped per client address and in total; other addresses keep being served', async () => {
  const t = await startTestDaemon({ connections: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, unreadAnswerTimeoutMs: 30_000, maxTotal: 6, maxPerClient: 3 } });
  const held: RawConnection[] = [];
  try {
    for (let i = 0; i < 3; i += 1) held.push(await heldConnection(t.url, '127.0.0.2'));
    assert.is(await statusFrom(t.url, '127.0.0.2'), 0, 'a fourth connection from one address is closed unanswered');
    assert.is(await statusFrom(t.url, '127.0.0.3'), 200, 'another address is served');
    assert.is(await statusFrom(t.url, '127.0.0.1'), 200);

    for (let i = 0; i < 3; i += 1) held.push(await heldConnection(t.url, `127.0.0.${4 + i}`));
    assert.is(await statusFrom(t.url, '127.0.0.7'), 0, 'past the total, a new address is refused too');

    held[0]!.socket.destroy();
    await held[0]!.closed;
    await waitFor('a freed slot to serve again', async () => (await statusFrom(t.url, '127.0.0.2')) === 200);
    assert.ok(held.slice(1).every((connection) => !connection.isClosed()), 'the refusals did not touch held connections');
  } finally {
    for (const connection of held) connection.socket.destroy();
    await t.destroy();
  }
});

test("requests Node's parser refuses are answered with the envelope too", async () => {
  const t = await startTestDaemon();
  try {
    const garbage = await rawExchange(t.url, 'NOT HTTP AT ALL\r\n\r\n');
    assert.match(garbage, /^HTTP\/1\.1 400 /);
    assert.equal(Object.keys(envelopeOf(garbage)), ['code', 'message', 'data', 'meta', 'timestamp']);
    const huge = await rawExchange(t.url, `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(huge, /^HTTP\/1\.1 431 /);
    assert.is(envelopeOf(huge).code, 'VALIDATION_ERROR');
    assert.match(huge, /x-content-type-options: nosniff/);
    assert.is((await call(t.url, 'GET', '/api/health')).status, 200);
  } finally {
    await t.destroy();
  }
});

test('no CORS headers unless configured; then only for the configured origins', async () => {
  const closed = await startTestDaemon();
  try {
    const answer = await call(closed.url, 'GET', '/api/health', { headers: { origin: 'https://admin.example.test' } });
    assert.is(answer.headers.get('access-control-allow-origin'), null);
    const preflight = await fetch(`${closed.url}/api/auth/login`, {
      method: 'OPTIONS',
      headers: { origin: 'https://admin.example.test', 'access-control-request-method': 'POST' },
    });
    assert.is(preflight.headers.get('access-control-allow-origin'), null);
    assert.is(preflight.status, 405);
  } finally {
    await closed.destroy();
  }

  const open = await startTestDaemon({ corsOrigins: ['https://admin.example.test'] });
  try {
    const preflight = await fetch(`${open.url}/api/auth/login`, {
      method: 'OPTIONS',
      headers: { origin: 'https://admin.example.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.is(preflight.status, 204);
    assert.is(preflight.headers.get('access-control-allow-origin'), 'https://admin.example.test');
    assert.is(preflight.headers.get('access-control-allow-credentials'), 'true');
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', 'POST');
    const login = await call(open.url, 'POST', '/api/auth/login', { json: ADMIN, headers: { origin: 'https://admin.example.test' } });
    assert.is(login.status, 200);
    assert.is(login.headers.get('access-control-allow-origin'), 'https://admin.example.test');
    assert.is(login.headers.get('vary'), 'Origin');
    const stranger = await call(open.url, 'GET', '/api/health', { headers: { origin: 'https://evil.example.test' } });
    assert.is(stranger.headers.get('access-control-allow-origin'), null);
  } finally {
    await open.destroy();
  }
});

test.run();
