import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChatMessage } from '../src/daemon/chat/store.js';
import { FileChatStore } from '../src/daemon/store/file/chat.js';
import { filesOnly } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';
import { conformance, type OpenedStores, using, usingTwo } from './helpers/stores.js';

/**
 * The chat store, held to one contract on both backends: each case runs on a
 * fresh data directory and on a fresh PostgreSQL schema.
 */

/** Small limits, so that the cases reach them quickly (the daemon's are 1,000 channels and 10,000 messages). */
const LIMITS = { channelsPerWorkspace: 5, messagesPerChannel: 200 };
const MESSAGES_PER_CHANNEL = LIMITS.messagesPerChannel;
const withLimits = { chat: LIMITS };

let clock = Date.parse('2026-03-01T00:00:00.000Z');

/** A message as the chat domain makes it; each one posted a millisecond after the previous. */
const message = (channel: string, text: string, details: Partial<ChatMessage> = {}): ChatMessage => ({
  id: randomUUID(),
  channel,
  message: text,
  sender: 'ann',
  publishedBy: 'user-1',
  eventId: randomUUID(),
  postedAt: new Date((clock += 1)).toISOString(),
  ...details,
});


/** Posts messages #from… to one channel, `batch` at a time, as concurrent notifications would. */
async function postMany(opened: OpenedStores, workspaceId: string, channel: string, count: number, batch = 100, from = 0): Promise<void> {
  for (let first = from; first < from + count; first += batch) {
    const texts = Array.from({ length: Math.min(batch, from + count - first) }, (_, n) => `#${first + n}`);
    await Promise.all(texts.map((text) => opened.stores.chat.post(workspaceId, message(channel, text))));
  }
}

conformance('chat: messages are read back as posted, oldest first, the latest `limit` of them, per workspace and channel', (site) =>
  using(site, async ({ stores: { chat } }) => {
    const first = message('general', 'hello', { sender: 'Ann', publishedBy: 'user-ann' });
    const second = message('general', 'world');
    const deal = message('deals', 'signed');
    for (const posted of [first, deal, second]) await chat.post('acme', posted);
    await chat.post('globex', message('general', 'elsewhere'));

    assert.equal(await chat.messages('acme', 'general', 50), [first, second]);
    assert.equal(await chat.messages('acme', 'general', 1), [second], 'the latest one');
    assert.equal(await chat.messages('acme', 'deals', 50), [deal]);
    assert.equal(await chat.messages('acme', 'nothing', 50), []);
    assert.equal(await chat.messages('initech', 'general', 50), []);
    assert.equal(await chat.channelsOf('acme'), [
      { channel: 'deals', messageCount: 1, lastMessageAt: deal.postedAt },
      { channel: 'general', messageCount: 2, lastMessageAt: second.postedAt },
    ]);
    assert.equal((await chat.channelsOf('globex')).map((summary) => summary.channel), ['general']);
    assert.equal(await chat.channelsOf('initech'), []);
  }),
);

conformance('chat: channels are listed by name whatever order they were created in', (site) =>
  using(site, async ({ stores: { chat } }) => {
    for (const channel of ['zulu', 'Alpha', 'beta', 'alpha', 'Échos', '42']) await chat.post('acme', message(channel, 'hi'));
    const names = ['zulu', 'Alpha', 'beta', 'alpha', 'Échos', '42'].sort((a, b) => a.localeCompare(b));
    assert.equal((await chat.channelsOf('acme')).map((summary) => summary.channel), names);
  }),
);

conformance('chat: any text a JSON payload can carry is kept exactly, in names and messages (U+0000, lone surrogates)', (site) =>
  using(site, async ({ stores: { chat } }) => {
    const odd = 'nul\u0000, lone \ud800 and \udfff, pair 😀, quote " and \\';
    const posted = message(`chan ${odd}`, `text ${odd}`, { sender: `sender ${odd}` });
    await chat.post('acme', posted);
    await chat.post('acme', message('chan nul', 'a different channel'));
    assert.equal(await chat.messages('acme', `chan ${odd}`, 10), [posted]);
    assert.equal((await chat.channelsOf('acme')).map((summary) => summary.channel).sort(), ['chan nul', `chan ${odd}`].sort());
  }),
);

conformance(`chat: a channel keeps its latest ${MESSAGES_PER_CHANNEL} messages, and its count says so`, (site) =>
  using(site, async (opened) => {
    const { chat } = opened.stores;
    // The first five one by one: concurrent posts may be kept in any order among themselves.
    await postMany(opened, 'acme', 'busy', 5, 1);
    await postMany(opened, 'acme', 'busy', MESSAGES_PER_CHANNEL, 100, 5);
    await chat.post('acme', message('quiet', 'alone'));
    // Asked for more than it keeps: what is dropped is gone.
    const kept = await chat.messages('acme', 'busy', 2 * MESSAGES_PER_CHANNEL);
    assert.is(kept.length, MESSAGES_PER_CHANNEL);
    const numbers = kept.map((posted) => Number(posted.message.slice(1)));
    assert.equal([...numbers].sort((a, b) => a - b), Array.from({ length: MESSAGES_PER_CHANNEL }, (_, n) => n + 5));
    const summary = (await chat.channelsOf('acme')).find((entry) => entry.channel === 'busy')!;
    assert.is(summary.messageCount, MESSAGES_PER_CHANNEL);
    assert.is(summary.lastMessageAt, kept.at(-1)!.postedAt);
    assert.is((await chat.channelsOf('acme')).find((entry) => entry.channel === 'quiet')!.messageCount, 1);
    if (opened.database) {
      const { rows } = await opened.database.query<{ count: number }>('SELECT count(*)::int AS count FROM chat_messages');
      assert.is(rows[0]!.count, MESSAGES_PER_CHANNEL + 1, 'older rows are deleted, not only hidden');
    }
  }, withLimits),
);

filesOnly(test)('chat.log stays bounded by what the channels keep, refused messages adding nothing (files only: the log is theirs)', async () => {
  const dir = await tempDir();
  try {
    const chat = await FileChatStore.open(dir, LIMITS);
    for (let n = 0; n < 10 * MESSAGES_PER_CHANNEL; n += 1) await chat.post('acme', message('busy', `#${n}`));
    for (let n = 1; n < LIMITS.channelsPerWorkspace; n += 1) await chat.post('acme', message(`c${n}`, 'hi'));
    for (let n = 0; n < 100; n += 1) assert.not.ok(await chat.post('acme', message(`refused-${n}`, 'no room')));
    await chat.close();
    const lines = readFileSync(join(dir, 'chat.log'), 'utf8').split('\n').filter(Boolean);
    const kept = MESSAGES_PER_CHANNEL + LIMITS.channelsPerWorkspace - 1;
    assert.ok(lines.length <= 2 * kept + MESSAGES_PER_CHANNEL, `${lines.length} lines for ${kept} messages kept`);
    assert.not.match(lines.join('\n'), 'refused-');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

conformance('chat: what was acknowledged is there after a restart, the limit included', async (site) => {
  const before = await using(site, async (opened) => {
    await postMany(opened, 'acme', 'busy', 2 * MESSAGES_PER_CHANNEL + 10, 250);
    await opened.stores.chat.post('acme', message('general', 'kept too'));
    return { busy: await opened.stores.chat.messages('acme', 'busy', MESSAGES_PER_CHANNEL), channels: await opened.stores.chat.channelsOf('acme') };
  }, withLimits);
  await using(site, async ({ stores: { chat } }) => {
    assert.equal(await chat.messages('acme', 'busy', MESSAGES_PER_CHANNEL), before.busy);
    assert.equal(await chat.channelsOf('acme'), before.channels);
    const next = message('busy', 'after the restart');
    await chat.post('acme', next);
    const kept = await chat.messages('acme', 'busy', 2 * MESSAGES_PER_CHANNEL);
    assert.equal(kept, [...before.busy.slice(1), next]);
  }, withLimits);
});

conformance(
  'several daemons: posts to one channel from two daemons at once are all kept, in one order both read, within the limit',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      await Promise.all([postMany(one, 'acme', 'shared', 60, 60), postMany(two, 'acme', 'shared', 60, 60)]);
      const fromOne = await one.stores.chat.messages('acme', 'shared', MESSAGES_PER_CHANNEL);
      assert.is(fromOne.length, 120);
      assert.equal(await two.stores.chat.messages('acme', 'shared', MESSAGES_PER_CHANNEL), fromOne);
      assert.is((await two.stores.chat.channelsOf('acme'))[0]!.messageCount, 120);

      await Promise.all([
        postMany(one, 'acme', 'shared', MESSAGES_PER_CHANNEL, 50),
        postMany(two, 'acme', 'shared', MESSAGES_PER_CHANNEL, 50),
      ]);
      const kept = await one.stores.chat.messages('acme', 'shared', 2 * MESSAGES_PER_CHANNEL);
      assert.is(kept.length, MESSAGES_PER_CHANNEL);
      assert.ok(kept.every((posted) => !fromOne.some((old) => old.id === posted.id)), 'the 120 older ones were dropped');
      assert.is((await two.stores.chat.channelsOf('acme'))[0]!.messageCount, MESSAGES_PER_CHANNEL);
    }, withLimits);
  },
  { shared: true },
);

conformance('chat: a workspace keeps at most its limit of channels; a message that would open another is refused and stores nothing', async (site) => {
  await using(site, async ({ stores: { chat } }) => {
    for (let n = 0; n < LIMITS.channelsPerWorkspace; n += 1) {
      assert.ok(await chat.takes('acme', `c${n}`));
      assert.ok(await chat.post('acme', message(`c${n}`, 'first')));
    }
    assert.not.ok(await chat.takes('acme', 'one-more'));
    assert.not.ok(await chat.post('acme', message('one-more', 'refused')));
    assert.ok(await chat.takes('acme', 'c0'), 'an existing channel still takes messages');
    assert.ok(await chat.post('acme', message('c0', 'second')));
    assert.ok(await chat.post('globex', message('one-more', 'another workspace has room')));
    assert.equal(await chat.messages('acme', 'one-more', 10), []);
    assert.is((await chat.channelsOf('acme')).length, LIMITS.channelsPerWorkspace);
  }, withLimits);
  await using(site, async ({ stores: { chat } }) => {
    assert.is((await chat.channelsOf('acme')).length, LIMITS.channelsPerWorkspace, 'the refused message left nothing behind');
    assert.not.ok(await chat.post('acme', message('one-more', 'still refused after a restart')));
    assert.is((await chat.messages('acme', 'c0', 10)).length, 2);
  }, withLimits);
});

conformance('chat: messages opening new channels at once never pass the limit of channels', (site) =>
  using(site, async ({ stores: { chat } }) => {
    const taken = await Promise.all(Array.from({ length: 20 }, (_, n) => chat.post('acme', message(`rush-${n}`, 'hi'))));
    assert.is(taken.filter(Boolean).length, LIMITS.channelsPerWorkspace);
    assert.is((await chat.channelsOf('acme')).length, LIMITS.channelsPerWorkspace);
  }, withLimits),
);

conformance(
  'several daemons: channels opened from two daemons at once never pass the limit together',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      const taken = await Promise.all(
        Array.from({ length: 20 }, (_, n) => (n % 2 === 0 ? one : two).stores.chat.post('acme', message(`rush-${n}`, 'hi'))),
      );
      assert.is(taken.filter(Boolean).length, LIMITS.channelsPerWorkspace);
      assert.is((await two.stores.chat.channelsOf('acme')).length, LIMITS.channelsPerWorkspace);
    }, withLimits);
  },
  { shared: true },
);

test.run();
