import type { RetentionPolicy } from '../../src/daemon/events/types.js';
import { itemsOf, unbounded, type PageBudget } from '../../src/daemon/paging.js';
import type { PlatformEvent } from '../../src/handlers/sdk.js';

/** A page of an event store (or the file log) with its events parsed from the budget it filled, as a listing sends them. */
export async function listed<Q, P extends { more: boolean }>(
  store: { page(workspaceId: string, query: Q, policy: RetentionPolicy, now: number, budget: PageBudget<PlatformEvent>): P | Promise<P> },
  workspaceId: string,
  query: Q,
  policy: RetentionPolicy,
  now: number,
): Promise<P & { items: PlatformEvent[] }> {
  const budget = unbounded<PlatformEvent>();
  const page = await store.page(workspaceId, query, policy, now, budget);
  return { ...page, items: itemsOf(budget) };
}
