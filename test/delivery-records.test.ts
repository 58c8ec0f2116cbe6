import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { DeliveryRecords } from '../src/daemon/dispatch/delivery-records.js';
import { Outbox } from '../src/daemon/dispatch/outbox.js';
import type { Delivery } from '../src/daemon/dispatch/types.js';
import { EventLog } from '../src/daemon/events/event-log.js';
import { tempDir } from './helpers/temp.js';

// Retention runs on sealed segments only, which the daemon seals every 100,000 events:
// this test drives the event log and the records on real files with small segments.

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-21T12:00:00.000Z');

const event = (n: number, ageMs: number): PlatformEvent => ({
  id: `e${n}`,
  eventKey: 'a.b',
  tenantId: 'w',
  actor: 'test',
  publishedBy: 'test',
  payload: {},
  schemaVersion: null,
  occurredAt: new Date(NOW - ageMs).toISOString(),
});

const delivery = (of: PlatformEvent): Delivery => ({
  id: `msg_${of.id}`,
  event: of,
  depth: 1,
  subscriber: { subscriptionId: 's1', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://127.0.0.1:1' },
  attempts: 0,
  nextAttemptAt: Date.parse(of.occurredAt),
  enqueuedAt: of.occurredAt,
  firstAttemptAt: null,
  lastError: null,
  replayCount: 0,
});

test('files: retention removes the records of the events it removes, on disk too', async () => {
  const dir = await tempDir();
  const log = await EventLog.open(join(dir, 'events'), { segmentMaxEvents: 2, recent: { perWorkspace: 100, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), (error) => {
    throw error;
  });
  const events = [event(1, 9 * DAY), event(2, 9 * DAY), event(3, 0), event(4, 0), event(5, 0)];
  for (const e of events) {
    await log.append(e);
    records.created([delivery(e)]);
  }
  const { removedIds } = await log.applyRetention({ maxAgeMs: 7 * DAY, maxPerWorkspace: 100 }, NOW);
  assert.equal([...removedIds].sort(), ['e1', 'e2']);
  assert.is(await records.removeEvents(removedIds), 2);
  await records.close();
  await log.close();

  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), () => undefined);
  const listed = reopened.list('w', { limit: 10 }).items.map((record) => record.eventId);
  assert.equal(listed, ['e5', 'e4', 'e3']);
  await reopened.close();
});

test('files: a pending delivery whose record never reached the disk gets it back from the outbox at the next start', async () => {
  const dir = await tempDir();
  const outbox = await Outbox.open(join(dir, 'outbox.log'), (error) => {
    throw error;
  });
  const pending = delivery(event(9, 0));
  await outbox.add([pending]);
  await outbox.close();
  // deliveries.log does not exist: the crash came before its group write.
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), () => undefined);
  const reopened = await Outbox.open(join(dir, 'outbox.log'), () => undefined);
  records.reconcile(reopened.values(), () => false, NOW);
  await records.durable(pending.id);
  const [record] = records.list('w', { limit: 10 }).items;
  assert.equal([record?.id, record?.status, record?.eventId], [pending.id, 'PENDING', 'e9']);
  await records.close();
  await reopened.close();
  const again = await DeliveryRecords.open(join(dir, 'deliveries.log'), () => undefined);
  assert.is(again.get(pending.id)?.status, 'PENDING', 'and it is on disk now');
  await again.close();
});

test.run();
