import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { DeliveryRecords } from '../src/daemon/dispatch/delivery-records.js';
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
    await records.created([delivery(e)]);
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

test.run();
