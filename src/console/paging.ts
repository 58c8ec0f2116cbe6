import { watch } from 'vue';
import { useRoute, useRouter, type LocationQuery } from 'vue-router';
import { useLoader } from './actions';

export interface CursorPage<T> {
  items: T[];
  nextCursor: string | null;
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

/** The address's query without its cursor and without empty values: the listing's filter. */
export function filterOf(query: LocationQuery): Record<string, string> {
  const filter: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) if (name !== 'cursor' && text(value) !== '') filter[name] = text(value);
  return filter;
}

/**
 * A listing paged by the API's opaque cursor (`meta.nextCursor`), newest
 * first, with the filter and the cursor in the address. A cursor leads only
 * to older items, so "newer" goes back through the cursors this page has
 * seen, and after a reload to the first page.
 */
export function useCursorPages<T>(load: (filter: Record<string, string>, cursor: string) => Promise<{ data: T[]; meta: { nextCursor?: string } | null }>) {
  const route = useRoute();
  const router = useRouter();
  const newerCursors: string[] = [];
  const cursor = () => text(route.query.cursor);

  const page = useLoader(async (): Promise<CursorPage<T>> => {
    const { data, meta } = await load(filterOf(route.query), cursor());
    return { items: data, nextCursor: typeof meta?.nextCursor === 'string' ? meta.nextCursor : null };
  });
  // Only this page's own address changes reload it, not the navigation away from it.
  const path = route.path;
  watch(
    () => route.fullPath,
    () => {
      if (route.path === path) void page.reload();
    },
    { immediate: true },
  );

  const go = (query: Record<string, string>) => void router.push({ path: route.path, query });
  return {
    page,
    cursor,
    filter: () => filterOf(route.query),
    /** A new filter starts again from the first page. */
    filterBy(filter: Record<string, string>) {
      newerCursors.length = 0;
      go(filter);
    },
    older() {
      const next = page.data?.nextCursor;
      if (!next) return;
      newerCursors.push(cursor());
      go({ ...filterOf(route.query), cursor: next });
    },
    newer() {
      const previous = newerCursors.pop() ?? '';
      go({ ...filterOf(route.query), ...(previous ? { cursor: previous } : {}) });
    },
    /** Back to the first page, forgetting the cursors (a listing that refused its cursor). */
    first() {
      newerCursors.length = 0;
      if (cursor()) go(filterOf(route.query));
      else void page.reload();
    },
  };
}
