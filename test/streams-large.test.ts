import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { endOf, openStream, tail, type Item, type Stream } from './helpers/streams.js';
import { waitFor } from './helpers/wait.js';

/**
 * Live streams under large events: payloads over 16 KiB travel as their size
 * alone, a consumer that reads keeps up through a burst, one that stops
 * reading is dropped alone and resumes from the history. Each case has its own
 * daemon, so that the history holds its items alone.
 */

const STREAM_PAYLOAD_BYTES = 16 * 1024;
const bytesOf = (payload: Record<string, unknown>) => Buffer.byteLength(JSON.stringify(payload));

/** Publishes every payload, `width` at a time; resolves with the event ids in the order given. */
async function publishAll(client: Api, workspace: string, eventKey: string, payloads: Array<Record<string, unknown>>, width = 20) {
  const ids: string[] = [];
  for (let from = 0; from < payloads.length; from += width) {
    const answers = await Promise.all(
      payloads.slice(from, from + width).map((payload) => client.post(`/api/workspaces/${workspace}/events/publish`, { eventKey, payload })),
    );
    for (const answer of answers) {
      assert.is(answer.status, 200, JSON.stringify(answer.body).slice(0, 200));
      ids.push(answer.body.meta.eventId as string);
    }
  }
  return ids;
}

const published = (stream: Stream) => stream.items.filter((item) => item.event === 'event.published');

async function withDaemon(run: (t: TestDaemon, admin: Api & { token: string }) => Promise<void>) {
  const t = await startTestDaemon();
  try {
    await run(t, await t.admin());
  } finally {
    await t.destroy();
  }
}

test('a burst of large events reaches a reading workspace stream and the admin stream whole: payloads over 16 KiB as payloadBytes', () =>
  withDaemon(async (t, admin) => {
    await createWorkspace(admin, 'burst');
    const member = await createUser(t, 'reader@example.test');
    assert.is((await admin.put(`/api/admin/workspaces/burst/members/${member.id}`)).status, 200);
    const streams = [await openStream(t.url, '/api/workspaces/burst/stream', member.token), await openStream(t.url, '/api/admin/stream', admin.token)];

    // 300 of 100 KB, every tenth event small, and the edges: exactly 16 KiB of JSON, one byte more, and under it in characters but over in bytes.
    const payloads: Array<Record<string, unknown>> = [];
    for (let n = 0; n < 300; n += 1) payloads.push(n % 10 === 0 ? { n, small: true } : { n, big: 'x'.repeat(100_000) });
    const edge = (text: string) => ({ e: text });
    payloads.push(edge('x'.repeat(STREAM_PAYLOAD_BYTES - 8)), edge('x'.repeat(STREAM_PAYLOAD_BYTES - 7)), edge('é'.repeat(STREAM_PAYLOAD_BYTES / 2)));
    assert.equal(payloads.slice(-3).map(bytesOf), [STREAM_PAYLOAD_BYTES, STREAM_PAYLOAD_BYTES + 1, STREAM_PAYLOAD_BYTES + 8]);
    const ids = await publishAll(admin, 'burst', 'app.burst', payloads);

    for (const stream of streams) {
      await waitFor('every event on the stream', () => published(stream).length === ids.length || stream.ended);
      assert.is(stream.ended, undefined, 'still connected');
      const byId = new Map(published(stream).map((item) => [item.data.id as string, item]));
      ids.forEach((id, index) => {
        const { data } = byId.get(id)!;
        const payload = payloads[index]!;
        assert.is(data.eventKey, 'app.burst');
        if (bytesOf(payload) <= STREAM_PAYLOAD_BYTES) {
          assert.equal(data.payload, payload, `payload of event ${index}`);
          assert.is(data.payloadBytes, undefined);
        } else {
          assert.is(data.payload, undefined, `no payload on event ${index}`);
          assert.is(data.payloadBytes, bytesOf(payload), `payloadBytes of event ${index}`);
        }
      });
      stream.close();
    }
  }),
);

test('a consumer that stops reading is dropped while one reading stays; it resumes with Last-Event-ID and gets exactly the items after it', () =>
  withDaemon(async (t, admin) => {
    await createWorkspace(admin, 'lag');
    const reader = await openStream(t.url, '/api/workspaces/lag/stream', admin.token);
    const stalled = await openStream(t.url, '/api/workspaces/lag/stream', admin.token, undefined, false);

    // Payloads that still travel on the stream: 700 of them are about 11 MB, far more than a stopped consumer's socket and budget hold.
    const count = 700;
    const payloads = Array.from({ length: count }, (_, n) => ({ n, text: 'y'.repeat(STREAM_PAYLOAD_BYTES - 100) }));
    const ids = await publishAll(admin, 'lag', 'app.lag', payloads, 100);
    await waitFor('every event on the reading stream', () => reader.items.length === count || reader.ended);
    assert.is(reader.ended, undefined, 'the reading consumer stays');
    // Concurrent publishes may take their ids in another order than their answers came.
    assert.equal(reader.items.map((item) => item.data.id).sort(), [...ids].sort());

    // The stopped consumer was offered the same items (the reader has them all): it was dropped on the way.
    stalled.response.resume();
    await endOf(stalled);
    const got = stalled.items.length;
    assert.ok(got > 0 && got < count, `dropped after ${got} of ${count}`);
    assert.equal(
      stalled.items.map((item) => item.id),
      reader.items.slice(0, got).map((item) => item.id),
      'what it got came in order, nothing skipped',
    );

    const lastSeen = stalled.items[got - 1]!.id;
    const resumed = await openStream(t.url, '/api/workspaces/lag/stream', admin.token, lastSeen);
    assert.is(resumed.status, 200);
    await waitFor('the items after its id', () => resumed.items.length >= count - got || resumed.ended);
    assert.is(resumed.ended, undefined, 'the history is sent, not refused');
    assert.equal(
      resumed.items.map((item: Item) => item.id),
      reader.items.slice(got).map((item) => item.id),
    );
    const payloadOf = new Map(ids.map((id, index) => [id, payloads[index]]));
    for (const item of [...reader.items, ...resumed.items]) assert.equal(item.data.payload, payloadOf.get(item.data.id), 'payloads under 16 KiB travel whole');

    const [after] = await publishAll(admin, 'lag', 'app.after', [{}]);
    await waitFor('the new item after the history', () => resumed.items.length === count - got + 1 || resumed.ended);
    assert.is(resumed.items.at(-1)!.data.id, after);
    for (const stream of [reader, resumed]) stream.close();
  }),
);

test('CLI events tail prints the size of a payload not sent live, and how to read the event', () =>
  withDaemon(async (t, admin) => {
    await createWorkspace(admin, 'tail-large');
    const child = await tail(t.url, admin.token, ['tail-large']);
    try {
      const payload = { big: 'z'.repeat(50_000) };
      const [large] = await publishAll(admin, 'tail-large', 'app.large', [payload]);
      const [small] = await publishAll(admin, 'tail-large', 'app.small', [{ n: 1 }]);
      const lines = await waitFor('both events printed', () => {
        const printed = child.output.stdout.split('\n').filter((line) => line.includes(large!) || line.includes(small!));
        return printed.length === 2 && printed;
      });
      assert.match(lines[0]!, `payload of ${bytesOf(payload)} bytes not sent live`);
      assert.match(lines[0]!, `platform events show tail-large ${large}`);
      assert.match(lines[0]!, `GET /api/workspaces/tail-large/events/${large}`);
      assert.not.match(lines[1]!, 'not sent live');
    } finally {
      child.kill('SIGKILL');
    }
  }),
);

test.run();
