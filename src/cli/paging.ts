import type { Command } from 'commander';
import type { CursorMeta, OffsetMeta, PageMeta } from '../contract/types.js';
import { usageError } from './errors.js';
import { integerFlag } from './flags.js';
import { printLine } from './output.js';

export interface PageFlags {
  limit?: number;
  offset?: number;
  all?: boolean;
}

/** The page size every listing route uses when no limit is given. */
const DEFAULT_LIMIT = 50;

/**
 * --limit, --offset and --all for a listing whose route pages with limit/offset:
 * the bounds are the route's, so a value it would refuse is a usage error here.
 */
export const withPaging = (command: Command, maxLimit: number, maxOffset = 999_999_999) =>
  command
    .option('--limit <n>', `at most this many (1-${maxLimit}; default ${DEFAULT_LIMIT})`, integerFlag(1, maxLimit))
    .option('--offset <n>', 'skip this many first (default 0)', integerFlag(0, maxOffset))
    .option('--all', 'every match, fetched page by page (not with --limit or --offset)');

export interface Listing<T> {
  items: T[];
  offset: number;
  /** Every match, when the route says (meta.total). */
  total: number | null;
  /** More follow this page (meta.nextOffset): a page may end before the page size, at the byte limit of a page. */
  more: boolean;
}

/** Fetches one page of a listing paged by offset: a `client.call` of the listing with this limit and offset in its query. */
export type OffsetPage<T> = (range: { limit: number | undefined; offset: number | undefined }) => Promise<{ data: T[]; meta: PageMeta | OffsetMeta }>;

/**
 * One page, or with --all every page: follows the route's limit/offset until a
 * page answers no `meta.nextOffset`, so nothing is out of reach.
 */
export async function fetchListing<T>(page: OffsetPage<T>, flags: PageFlags, maxLimit: number): Promise<Listing<T>> {
  if (flags.all && (flags.limit !== undefined || flags.offset !== undefined)) throw usageError('give --all or --limit/--offset, not both');
  if (!flags.all) {
    // Listings paged by offset answer PageMeta; the audit trail answers it without a total.
    const { data, meta } = await page({ limit: flags.limit, offset: flags.offset });
    const total = 'total' in meta ? meta.total : null;
    return { items: data, offset: flags.offset ?? 0, total, more: meta.nextOffset !== undefined };
  }
  const items: T[] = [];
  for (;;) {
    const { data, meta } = await page({ limit: maxLimit, offset: items.length });
    items.push(...data);
    // A page may end before the limit (the byte limit of a page): `nextOffset` says whether more follow.
    if (meta.nextOffset === undefined) return { items, offset: 0, total: items.length, more: false };
  }
}

/** After a table: says when there is more than the page shows, and how to get it. */
export function printPageHint(listing: Listing<unknown>): void {
  const shown = listing.items.length;
  const range = `${listing.offset + 1}-${listing.offset + shown}`;
  if (listing.total !== null && shown > 0 && listing.offset + shown < listing.total) {
    printLine(`(${range} of ${listing.total}; see --offset, or --all)`);
  } else if (listing.total === null && listing.more) {
    printLine(`(${range}; there may be more: see --offset, or --all)`);
  }
}

/** Fetches one page of a listing paged by cursor: a `client.call` of the listing with this limit and cursor in its query. */
export type CursorPage<T> = (range: { limit: number | undefined; cursor: string | undefined }) => Promise<{ data: T[]; meta: CursorMeta }>;

/**
 * One page of a listing that pages with opaque cursors (`meta.nextCursor`), or
 * with `all` every page. `more` tells whether a page is left behind.
 */
export async function fetchCursorListing<T>(
  page: CursorPage<T>,
  options: { limit?: number | undefined; all?: boolean | undefined },
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const { data, meta } = await page({ limit: options.limit, cursor });
    items.push(...data);
    cursor = meta.nextCursor;
  } while (options.all && cursor);
  return { items, more: cursor !== undefined };
}
