import { WEBHOOK_REQUESTS_KEPT } from '../../contract/requests.js';
import { unbounded } from '../paging.js';

export const REQUEST_OUTCOMES = ['ACCEPTED', 'REJECTED', 'FAILED', 'DUPLICATE'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

/** One inbound call as the ADMIN API shows it. Headers are masked and bounded before they get here. */
export interface WebhookRequestEntry {
  id: string;
  receivedAt: string;
  outcome: RequestOutcome;
  reason: string;
  eventId?: string;
  headers: Record<string, string>;
  bodyExcerpt: string;
}

/** Each extension keeps its latest calls; older ones are dropped when a new one is recorded. */
export const REQUESTS_PER_EXTENSION = WEBHOOK_REQUESTS_KEPT;

/** A kept call and its number: per extension, one more than the previous call's, so cursors page by it. */
export interface NumberedRequest {
  seq: number;
  entry: WebhookRequestEntry;
}

/** Where a page stops: calls numbered below `before`, down to `floor` (the oldest call kept when the first page was read). */
export interface RequestWindow {
  before: number;
  floor: number;
}

export interface RequestPage {
  entries: WebhookRequestEntry[];
  /** Absent on the last page. */
  next?: RequestWindow;
  /** Set when the window reaches calls dropped since the first page was read: they can no longer be listed. */
  lost: boolean;
}

/**
 * Where the inbound webhook calls of every extension are kept
 * (store/file/webhook-requests.ts, store/postgres/webhook-requests.ts). Each
 * extension keeps its latest REQUESTS_PER_EXTENSION calls, numbered without
 * gaps (numbers survive restarts), so the kept numbers are consecutive.
 * Entries are diagnostics: recording one never fails the call it describes.
 */
export interface WebhookRequestStore {
  /**
   * Adds the call as the extension's newest, dropping the oldest beyond the
   * limit. Every reader sees it once this resolves; it never rejects: a
   * failure to keep it goes to the store's error report.
   */
  record(extensionKey: string, entry: WebhookRequestEntry): Promise<void>;
  /** The numbers of the extension's oldest and newest kept calls; null when it has none. */
  keptRange(extensionKey: string): Promise<{ oldest: number; newest: number } | null>;
  /** The extension's kept calls numbered in the window, newest first, at most `limit`. */
  newestFirst(extensionKey: string, window: RequestWindow, limit: number): Promise<NumberedRequest[]>;
  /** Once every entry recorded so far is written. */
  close(): Promise<void>;
}

/** The window of a first page: every call kept now. */
export async function firstWindow(store: WebhookRequestStore, extensionKey: string): Promise<RequestWindow> {
  const kept = await store.keptRange(extensionKey);
  return kept ? { before: kept.newest + 1, floor: kept.oldest } : { before: 1, floor: 1 };
}

/** Newest first, at most `limit` calls of the window, and as many as `budget` holds (entries are small: read at once). */
export async function requestPage(
  store: WebhookRequestStore,
  extensionKey: string,
  window: RequestWindow,
  limit: number,
  budget = unbounded<WebhookRequestEntry>(),
): Promise<RequestPage> {
  const calls = await store.newestFirst(extensionKey, window, limit);
  // Short of the limit above the floor: the calls below were dropped since the first page, unless the
  // window lies beyond every kept call. Read after the page, the range can only have moved on since.
  const lowest = calls.at(-1)?.seq ?? window.before;
  const lost = calls.length < limit && lowest > window.floor && ((await store.keptRange(extensionKey))?.oldest ?? Number.POSITIVE_INFINITY) > window.floor;
  const page: typeof calls = [];
  for (const call of calls) {
    if (!budget.admit(call.entry)) break;
    page.push(call);
  }
  const last = page.at(-1)?.seq ?? window.before;
  const more = last > window.floor;
  return { entries: page.map((call) => call.entry), lost, ...(page.length > 0 && more ? { next: { before: last, floor: window.floor } } : {}) };
}
