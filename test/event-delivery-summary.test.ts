import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, publishConcurrently, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api, HttpResult } from './helpers/http.js';
import { subscriberPool } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();

type Summary = { delivered: number; pending: number; dead: number; discarded: number };
const summary = (counts: Partial<Summary>): Summary => ({ delivered: 0, pending: 0, dead: 0, discarded: 0, ...counts });

/** Each event key reaches its own set of subscribers, so that its events' deliveries end as the summary says. */
const OUTCOMES: Record<string, Summary> = {
  'crm.deal.won': summary({ delivered: 1 }),
  'crm.deal.lost': summary({ delivered: 1, dead: 1 }),
  'crm.deal.open': summary({ pending: 1 }),
  'crm.deal.stalled': summary({ dead: 1, pending: 1 }),
  'crm.note.added': summary({}),
};

/** Which of those each filter value lists. */
const FILTERED: Record<string, string[]> = {
  failed: ['crm.deal.lost', 'crm.deal.stalled'],
  pending: ['crm.deal.open', 'crm.deal.stalled'],
  delivered: ['crm.deal.won'],
  none: ['crm.note.added'],
};

/** Every page of the listing with this query, two events a page, newest first. */
async function allPages(query: string): Promise<Array<{ id: string; eventKey: string; deliverySummary: Summary }>> {
  const events = [];
  let cursor: string | undefined;
  do {
    const page = await admin.get(`/api/workspaces/summaries/events?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.is(page.status, 200, page.text);
    assert.ok(page.body.data.length <= 2);
    events.push(...page.body.data);
    cursor = page.body.meta.nextCursor;
  } while (cursor);
  return events;
}

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

test('each listed event says how its deliveries stand, and the deliveries filter pages through exactly the matching events', async () => {
  const answering = await subscribers.start(() => ({ status: 200 }));
  const failing = await subscribers.start(() => ({ status: 500 }));
  // Asked to come back in an hour: the delivery stays pending for the whole test.
  const patient = await subscribers.start(() => ({ status: 429, headers: { 'retry-after': '3600' } }));
  await workspaceWith(admin, 'summaries', 'crm');
  await subscribeExternal(admin, 'summaries', 'crm.deal.won', 'crm', answering.url);
  await subscribeExternal(admin, 'summaries', 'crm.deal.lost', 'crm', answering.url);
  await subscribeExternal(admin, 'summaries', 'crm.deal.lost', 'crm', failing.url);
  await subscribeExternal(admin, 'summaries', 'crm.deal.open', 'crm', patient.url);
  await subscribeExternal(admin, 'summaries', 'crm.deal.stalled', 'crm', failing.url);
  await subscribeExternal(admin, 'summaries', 'crm.deal.stalled', 'crm', patient.url);

  // Three rounds of every key, so that each filter's events are spread over several pages among the others.
  const published: Array<{ id: string; eventKey: string }> = [];
  for (let round = 0; round < 3; round += 1) {
    for (const eventKey of Object.keys(OUTCOMES)) {
      const result = await admin.post('/api/workspaces/summaries/events/publish', { eventKey, payload: { round } });
      assert.is(result.status, 200, result.text);
      published.push({ id: result.body.meta.eventId, eventKey });
    }
  }
  const newestFirst = published.reverse();

  const listed = await waitFor('every delivery settled as its subscriber answers', async () => {
    const events = await allPages('');
    return events.every((event) => JSON.stringify(event.deliverySummary) === JSON.stringify(OUTCOMES[event.eventKey])) && events;
  });
  assert.equal(
    listed.map(({ id, eventKey }) => ({ id, eventKey })),
    newestFirst,
    'unfiltered, every event once, newest first',
  );

  for (const [filter, eventKeys] of Object.entries(FILTERED)) {
    const events = await allPages(`&deliveries=${filter}`);
    assert.equal(
      events.map((event) => event.id),
      newestFirst.filter((event) => eventKeys.includes(event.eventKey)).map((event) => event.id),
      `deliveries=${filter}`,
    );
    for (const event of events) assert.equal(event.deliverySummary, OUTCOMES[event.eventKey], `${filter}: ${event.eventKey}`);
  }

  const narrowed = await allPages('&deliveries=failed&eventKey=crm.deal.lost');
  assert.equal(
    narrowed.map((event) => event.id),
    newestFirst.filter((event) => event.eventKey === 'crm.deal.lost').map((event) => event.id),
    'the filter combines with the event key',
  );
});

test('a filter finds its events behind thousands that do not match, and pages through those that do', async () => {
  const failing = await subscribers.start(() => ({ status: 500 }));
  await workspaceWith(admin, 'sparse', 'crm');
  await subscribeExternal(admin, 'sparse', 'crm.deal.lost', 'crm', failing.url);
  const lost = (await admin.post('/api/workspaces/sparse/events/publish', { eventKey: 'crm.deal.lost', payload: {} })).body.meta.eventId;
  // More events than the file store looks at in one step: the filtered listing goes on over several.
  const unheard = new Set(await publishConcurrently(admin, 'sparse', 2_500, 8, (n) => ({ eventKey: 'crm.note.added', payload: { n } })));
  await waitFor('the delivery dead', async () => (await admin.get(`/api/workspaces/sparse/events/${lost}`)).body.data.deliveries[0].status === 'DEAD');

  const failed: string[] = [];
  let cursor: string | undefined;
  do {
    const page: HttpResult = await admin.get(`/api/workspaces/sparse/events?deliveries=failed&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
    failed.push(...page.body.data.map((event: { id: string }) => event.id));
    cursor = page.body.meta.nextCursor;
  } while (cursor);
  assert.equal(failed, [lost]);

  const none = new Set<string>();
  cursor = undefined;
  do {
    const page: HttpResult = await admin.get(`/api/workspaces/sparse/events?deliveries=none&limit=700${cursor ? `&cursor=${cursor}` : ''}`);
    for (const event of page.body.data) none.add(event.id);
    cursor = page.body.meta.nextCursor;
  } while (cursor);
  assert.is(none.size, unheard.size);
  assert.ok([...unheard].every((id) => none.has(id)));
});

test('a deliveries filter the listing does not know is 400 in the envelope', async () => {
  for (const value of ['FAILED', 'dead', '']) {
    const result = await admin.get(`/api/workspaces/summaries/events?deliveries=${value}`);
    assert.is(result.status, 400, `${value}: ${result.text}`);
    assert.is(result.body.code, 'VALIDATION_ERROR');
    assert.match(JSON.stringify(result.body.meta.issues), /deliveries/);
  }
});

test.run();
