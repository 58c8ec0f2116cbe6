import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signGithub } from '../src/handlers/webhooks/sign.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, configureExtension, createWorkspace, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { call, type Api } from './helpers/http.js';
import { subscriberPool } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

/** PLATFORM_MAX_PAGE_BYTES of the first daemon: small, so that a few items of a few KiB fill a page. */
const PAGE_BYTES = 8 * 1024;
/** What the envelope adds around `data`: code, message, meta (a cursor, counts) and timestamp. */
const ENVELOPE_BYTES = 1024;
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();
/** The workspace's events as published, newest first. */
const published: string[] = [];
let largeEventId = '';

const publish = async (workspace: string, payload: Record<string, unknown>) => {
  const result = await admin.post(`/api/workspaces/${workspace}/events/publish`, { eventKey: 'doc.saved', payload });
  assert.is(result.status, 200, result.text);
  return result.body.meta.eventId as string;
};

interface Walk {
  pages: any[][];
  items: any[];
}

/**
 * Every page of a listing, following meta.nextCursor from the first page: each
 * page holds at least one item, stays within the limit unless it holds one
 * item only, and holds as many as fit (the next page's first item would not
 * have). For listings paged by offset, nextOffset agrees with the cursor.
 */
async function walk(client: Api, path: string, query = 'limit=500', { readsBackwards = false } = {}): Promise<Walk> {
  const pages: any[][] = [];
  let cursor: string | undefined;
  do {
    const result = await client.get(`${path}?${query}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    assert.is(result.status, 200, result.text);
    const { data, meta } = result.body;
    assert.ok(data.length >= 1, `${path}: a page holds at least one item`);
    if (data.length > 1) {
      assert.ok(bytes(data) <= PAGE_BYTES + 2, `${path}: ${bytes(data)} bytes of items on one page`);
      assert.ok(Buffer.byteLength(result.text) <= PAGE_BYTES + ENVELOPE_BYTES, `${path}: ${Buffer.byteLength(result.text)} bytes in all`);
    }
    if ('offset' in meta) assert.is(meta.nextOffset, meta.nextCursor === undefined ? undefined : meta.offset + data.length);
    const previous = pages.at(-1);
    // The item that did not fit on the page before: the next in the listing's order (the newest of a chat page).
    const next = readsBackwards ? data.at(-1) : data[0];
    if (previous) assert.ok(bytes(previous) + 1 + bytes(next) > PAGE_BYTES, `${path}: the page before held as many as fit`);
    pages.push(data);
    cursor = meta.nextCursor;
  } while (cursor !== undefined);
  return { pages, items: pages.flat() };
}

const exactlyOnce = (ids: string[], expected: string[]) => {
  assert.is(new Set(ids).size, ids.length, 'no item is listed twice');
  assert.equal([...ids].sort(), [...expected].sort());
};

test.before(async () => {
  t = await startTestDaemon({ maxPageBytes: PAGE_BYTES, dispatch: FAST_DISPATCH });
  admin = await t.admin();
  // Every delivery fails for good: delivery records with attempts, and dead letters carrying their events.
  const down = await subscribers.start(() => ({ status: 503 }));
  await workspaceWith(admin, 'pages', 'crm');
  await subscribeExternal(admin, 'pages', 'doc.saved', 'crm', down.url);
  for (let index = 0; index < 12; index += 1) {
    // One event is larger than a page by itself.
    const payload = index === 5 ? { text: 'L'.repeat(12 * 1024) } : { index, text: 'x'.repeat(2500) };
    const eventId = await publish('pages', payload);
    if (index === 5) largeEventId = eventId;
    published.unshift(eventId);
  }
  await waitFor('every delivery a dead letter', async () => {
    const letters = await admin.get('/api/admin/dead-letters?workspaceId=pages&limit=1');
    const pending = await admin.get('/api/workspaces/pages/deliveries?status=PENDING&limit=1');
    return (letters.body.meta.total === published.length && pending.body.data.length === 0) || undefined;
  });
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

test('events: pages bounded in bytes, the cursor lists every event once in order, a larger one alone', async () => {
  const { pages, items } = await walk(admin, '/api/workspaces/pages/events');
  assert.ok(pages.length >= 4, `${pages.length} pages`);
  assert.equal(
    items.map((event) => event.id),
    published,
  );
  assert.equal(
    pages.find((page) => page.some((event) => event.id === largeEventId))!.map((event) => event.id),
    [largeEventId],
  );
  // `limit` still bounds a page of small items.
  const limited = await admin.get('/api/workspaces/pages/events?limit=1');
  assert.is(limited.body.data.length, 1);
});

test('deliveries: pages bounded in bytes, every record once in order', async () => {
  const { pages, items } = await walk(admin, '/api/workspaces/pages/deliveries');
  assert.ok(pages.length >= 2, `${pages.length} pages`);
  assert.equal(
    items.map((record) => record.eventId),
    published,
  );
  assert.ok(items.every((record) => record.status === 'DEAD' && record.attempts.length >= 1));
});

test('dead letters: pages bounded in bytes, continued by nextCursor (or nextOffset), every letter once', async () => {
  const { pages, items } = await walk(admin, '/api/admin/dead-letters', 'workspaceId=pages&limit=500');
  assert.ok(pages.length >= 4, `${pages.length} pages`);
  exactlyOnce(
    items.map((letter) => letter.event.id),
    published,
  );
  const large = pages.find((page) => page.some((letter) => letter.event.id === largeEventId))!;
  assert.is(large.length, 1);
  // nextOffset continues the same way.
  const first = await admin.get('/api/admin/dead-letters?workspaceId=pages');
  const second = await admin.get(`/api/admin/dead-letters?workspaceId=pages&offset=${first.body.meta.nextOffset}`);
  assert.equal(second.body.data, pages[1]);
  // A cursor of another workspace's listing is refused.
  const foreign = await admin.get(`/api/admin/dead-letters?cursor=${encodeURIComponent(first.body.meta.nextCursor)}`);
  assert.is(foreign.status, 400);
});

test('audit trail and marketplace: pages bounded in bytes, every record once', async () => {
  const description = 'd'.repeat(1900);
  for (let index = 0; index < 8; index += 1) {
    const key = `paged-${index}`;
    const created = await admin.post('/api/admin/marketplace/extensions', { extensionKey: key, name: key, description, category: 'paged' });
    assert.is(created.status, 201, created.text);
  }
  const audit = await walk(admin, '/api/admin/audit', 'limit=1000');
  assert.ok(audit.pages.length >= 2, `${audit.pages.length} pages`);
  assert.is(new Set(audit.items.map((record) => record.id)).size, audit.items.length);
  assert.equal(
    audit.items.filter((record) => record.extensionKey.startsWith('paged-')).map((record) => record.extensionKey),
    ['paged-7', 'paged-6', 'paged-5', 'paged-4', 'paged-3', 'paged-2', 'paged-1', 'paged-0'],
  );

  const browse = await walk(admin, '/api/marketplace/extensions', 'category=paged&limit=100');
  assert.ok(browse.pages.length >= 2, `${browse.pages.length} pages`);
  exactlyOnce(
    browse.items.map((extension) => extension.extensionKey),
    ['paged-0', 'paged-1', 'paged-2', 'paged-3', 'paged-4', 'paged-5', 'paged-6', 'paged-7'],
  );
});

test('webhook request log: pages bounded in bytes, every call once', async () => {
  await publishExtension(admin, 'hooked');
  await createWorkspace(admin, 'inbox');
  await configureExtension(admin, 'hooked', [
    ['webhook.scheme', 'STRING', 'github'],
    ['webhook.secret', 'SECRET', 'the-secret-of-hooked'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
  ]);
  const calls: string[] = [];
  for (let index = 0; index < 8; index += 1) {
    const body = JSON.stringify({ index, text: 'w'.repeat(2500) });
    const delivery = `call-${index}`;
    calls.unshift(delivery);
    const result = await call(t.url, 'POST', '/api/webhooks/hooked', {
      raw: body,
      headers: { 'content-type': 'application/json', 'x-github-delivery': delivery, 'x-github-event': 'push', 'x-hub-signature-256': signGithub('the-secret-of-hooked', body) },
    });
    assert.is(result.status, 200, result.text);
  }
  const { pages, items } = await walk(admin, '/api/admin/webhooks/hooked/requests', 'limit=1000');
  assert.ok(pages.length >= 2, `${pages.length} pages`);
  assert.equal(
    items.map((entry) => entry.headers['x-github-delivery']),
    calls,
  );
});

interface PagedRead {
  ids: string[];
  pageBytes: number[];
  fewestItems: number;
}

/**
 * Follows a listing's cursor in a worker thread: reading and parsing pages of
 * megabytes is the client's work, and it stays out of this thread's event
 * loop, which is the daemon's (its delay is what the test reports).
 */
function pageInWorker(url: string, token: string, path: string): Promise<PagedRead> {
  const code = `
    const { parentPort, workerData: { url, token, path } } = require('node:worker_threads');
    (async () => {
      const read = { ids: [], pageBytes: [], fewestItems: Infinity };
      let cursor;
      do {
        const response = await fetch(url + path + (cursor === undefined ? '' : '&cursor=' + encodeURIComponent(cursor)), { headers: { authorization: 'Bearer ' + token } });
        const text = await response.text();
        if (response.status !== 200) throw new Error(response.status + ' ' + text.slice(0, 300));
        const { data, meta } = JSON.parse(text);
        read.pageBytes.push(Buffer.byteLength(text));
        read.fewestItems = Math.min(read.fewestItems, data.length);
        for (const item of data) read.ids.push(item.id);
        cursor = meta.nextCursor;
      } while (cursor !== undefined);
      parentPort.postMessage(read);
    })();
  `;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { url, token, path } });
    worker.once('message', (read: PagedRead) => {
      resolve(read);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

test('chat messages: pages bounded in bytes counted from the newest, the cursor goes on to older ones', async () => {
  await createWorkspace(admin, 'talk');
  const sent: string[] = [];
  for (let index = 0; index < 8; index += 1) {
    const message = `${index} ${'c'.repeat(2500)}`;
    sent.push(message);
    const result = await admin.post('/api/workspaces/talk/events/publish', { eventKey: 'platform.notification', payload: { channel: 'long', message } });
    assert.is(result.status, 200, result.text);
  }
  await waitFor('every message posted', async () => (await admin.get('/api/workspaces/talk/chat/channels')).body.data[0]?.messageCount === 8 || undefined);
  const { pages } = await walk(admin, '/api/workspaces/talk/chat/channels/long/messages', 'limit=1000', { readsBackwards: true });
  assert.ok(pages.length >= 2, `${pages.length} pages`);
  // Each page oldest first; the first page holds the newest messages.
  assert.equal(
    [...pages].reverse().flat().map((message) => message.message),
    sent,
  );
});

test('while a member pages through 1,000 events of 200 KB, other requests are answered', async () => {
  const big = await startTestDaemon();
  try {
    const client = await big.admin();
    await createWorkspace(client, 'bulk');
    const text = 'b'.repeat(200_000);
    const expected: string[] = [];
    let next = 0;
    const publisher = async () => {
      while (next < 1000) {
        const index = next++;
        const result = await client.post('/api/workspaces/bulk/events/publish', { eventKey: 'bulk.item', payload: { index, text } });
        assert.is(result.status, 200, result.text);
        expected[index] = result.body.meta.eventId;
      }
    };
    await Promise.all(Array.from({ length: 4 }, publisher));

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    let paging = true;
    let healthAnswers = 0;
    const health = (async () => {
      while (paging) {
        const result = await call(big.url, 'GET', '/api/health');
        assert.is(result.status, 200);
        healthAnswers += 1;
      }
    })();
    let read: PagedRead;
    try {
      read = await pageInWorker(big.url, client.token, '/api/workspaces/bulk/events?limit=1000');
    } finally {
      paging = false;
      await health;
      delay.disable();
    }
    const { ids, pageBytes, fewestItems } = read;
    const pages = pageBytes.length;
    assert.ok(fewestItems >= 1, 'every page holds an event');
    const largest = Math.max(...pageBytes);
    assert.ok(largest <= 4 * 1024 * 1024 + ENVELOPE_BYTES, `a page of ${largest} bytes`);
    // Reported, not asserted: time is the machine's.
    console.log(`    1,000 events of 200 KB: ${pages} pages, ${healthAnswers} health answers meanwhile, event loop delay max ${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`);
    assert.ok(pages >= 40, `${pages} pages`);
    assert.ok(healthAnswers >= pages, `${healthAnswers} health answers while ${pages} pages were read`);
    // Published four at a time: in the order they were recorded, which is not the order of `index`.
    exactlyOnce(ids, expected);
  } finally {
    await big.destroy();
  }
});

test.run();
