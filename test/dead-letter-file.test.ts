import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DeadLetterFile } from '../src/daemon/store/file/dead-letters.js';
import type { StoredDeadLetter } from '../src/daemon/dispatch/types.js';
import { tempDir } from './helpers/temp.js';

// The file backend's dead letters (dead-letters.log) on real files: migration from
// dead-letters.json, restarts, and the rewrite once removed letters dominate.

const NOW = Date.parse('2026-11-21T12:00:00.000Z');

const letter = (n: number, workspaceId = 'w', serviceBaseUrl = 'http://127.0.0.1:1/hooks'): StoredDeadLetter => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  deliveryId: `msg_${n}`,
  event: {
    id: `e${n}`,
    eventKey: n % 2 === 0 ? 'even.one' : 'odd.one',
    tenantId: workspaceId,
    actor: 'test',
    publishedBy: 'test',
    payload: { n },
    schemaVersion: null,
    occurredAt: new Date(NOW).toISOString(),
  },
  subscriber: { subscriptionId: 's1', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl },
  attempts: 1,
  lastError: { message: 'subscriber answered HTTP 400', status: 400 },
  firstAttemptAt: new Date(NOW).toISOString(),
  deadAt: new Date(NOW + n).toISOString(),
  replayCount: 0,
  depth: 1,
});

const failOnError = (error: unknown) => {
  throw error;
};
const ids = (letters: StoredDeadLetter[]) => letters.map((one) => one.deliveryId);
const logLines = (dir: string) => readFileSync(join(dir, 'dead-letters.log'), 'utf8').trim().split('\n').filter(Boolean);

test('dead-letters.json of an earlier version is migrated once into the log, credentials masked, and the JSON removed', async () => {
  const dir = await tempDir();
  const letters = [letter(1), letter(2, 'w', 'http://user:secret@127.0.0.1:1/hooks?api_key=k3y'), letter(3, 'other')];
  writeFileSync(join(dir, 'dead-letters.json'), JSON.stringify({ schemaVersion: 1, deadLetters: letters }));
  const file = await DeadLetterFile.open(dir, failOnError);
  assert.not.ok(existsSync(join(dir, 'dead-letters.json')));
  assert.is(file.size, 3);
  assert.equal(ids(file.list({ workspaceId: 'w' }, { limit: 10, offset: 0 }).items), ['msg_2', 'msg_1'], 'newest first');
  assert.is(file.get(letters[1]!.id).subscriber.serviceBaseUrl, 'http://****@127.0.0.1:1/hooks?****');
  assert.not.ok(readFileSync(join(dir, 'dead-letters.log'), 'utf8').includes('secret'));
  await file.close();

  // A stop between writing the log and removing the JSON: the log is complete and wins.
  writeFileSync(join(dir, 'dead-letters.json'), JSON.stringify({ schemaVersion: 1, deadLetters: [letter(9)] }));
  const again = await DeadLetterFile.open(dir, failOnError);
  assert.not.ok(existsSync(join(dir, 'dead-letters.json')));
  assert.equal(ids(again.list({}, { limit: 10, offset: 0 }).items), ['msg_3', 'msg_2', 'msg_1']);
  await again.close();
});

test('letters added, replaced and removed read the same after a restart; filters, paging and totals as before', async () => {
  const dir = await tempDir();
  const file = await DeadLetterFile.open(dir, failOnError);
  for (let n = 1; n <= 6; n += 1) await file.add(letter(n));
  // The same delivery dead-lettered again (after a crash): its letter is replaced, and listed as the newest.
  await file.add({ ...letter(2), id: '00000000-0000-4000-8000-000000000099' });
  await file.remove([letter(4).id, 'not-a-letter']);
  const expected = ['msg_2', 'msg_6', 'msg_5', 'msg_3', 'msg_1'];
  assert.equal(ids(file.list({}, { limit: 10, offset: 0 }).items), expected);
  await file.close();

  const reopened = await DeadLetterFile.open(dir, failOnError);
  assert.is(reopened.size, 5);
  assert.equal(ids(reopened.list({}, { limit: 10, offset: 0 }).items), expected);
  assert.equal(reopened.list({ eventKey: 'odd.one' }, { limit: 1, offset: 1 }), { items: [letter(3)], total: 3 });
  assert.equal(reopened.list({ extensionKey: 'nosuch' }, { limit: 10, offset: 0 }), { items: [], total: 0 });
  assert.not.ok(reopened.has(letter(2).id), 'the replaced letter is gone');
  assert.ok(reopened.holdsDelivery('msg_2'));
  assert.not.ok(reopened.holdsDelivery('msg_4'));
  const batch = reopened.matchingIds({ workspaceId: 'w' }, null, 2);
  assert.equal(batch.letters.map((one) => one.id), [letter(1).id, letter(3).id]);
  const rest = reopened.matchingIds({ workspaceId: 'w' }, batch.next, 10);
  assert.equal(rest.letters.map((one) => one.id), [letter(5).id, letter(6).id, '00000000-0000-4000-8000-000000000099']);
  assert.is(rest.next, null);
  await reopened.close();
});

test('the log is rewritten without removed letters once they dominate, and reads the same after', async () => {
  const dir = await tempDir();
  const file = await DeadLetterFile.open(dir, failOnError);
  const all = Array.from({ length: 12_000 }, (_, n) => letter(n + 1, n % 3 === 0 ? 'x' : 'w'));
  await Promise.all(all.map((one) => file.add(one)));
  const kept = new Set([6, 500, 11_999].map((n) => all[n]!.id));
  await file.remove(all.filter((one) => !kept.has(one.id)).map((one) => one.id));
  const expected = ['msg_12000', 'msg_501', 'msg_7'];
  assert.equal(ids(file.list({}, { limit: 10, offset: 0 }).items), expected);
  // An add waits for the rewrite the removal started, and is found after it.
  await file.add(letter(20_000));
  assert.equal(file.get(letter(20_000).id).deliveryId, 'msg_20000');
  assert.equal(ids(file.list({}, { limit: 10, offset: 0 }).items), ['msg_20000', ...expected]);
  await file.close();
  assert.is(logLines(dir).length, 4, 'one add line per letter left');
  const reopened = await DeadLetterFile.open(dir, failOnError);
  assert.equal(ids(reopened.list({}, { limit: 10, offset: 0 }).items), ['msg_20000', ...expected]);
  assert.equal(reopened.list({ workspaceId: 'x' }, { limit: 10, offset: 0 }).total, 1);
  await reopened.close();
});

test.run();
