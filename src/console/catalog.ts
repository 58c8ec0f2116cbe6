import { problemWith, Slug } from '../contract/schemas';
import type { AuditRecord, ExtensionDetail } from '../contract/types';
import { onScopeDispose, ref, watch, type Ref } from 'vue';
import { ApiError, call } from './api';

export interface ExtensionDraft {
  extensionKey: string;
  name: string;
  category: string;
  description: string;
  /** Permission names separated by spaces, commas or new lines. */
  permissions: string;
}

export const emptyExtension = (): ExtensionDraft => ({ extensionKey: '', name: '', category: '', description: '', permissions: '' });

/** Adds an extension to the catalog, without versions yet; the daemon checks every field again. */
export async function createExtension(draft: ExtensionDraft): Promise<ExtensionDetail> {
  const problem = problemWith(Slug, draft.extensionKey);
  if (problem) throw new ApiError(`Key ${problem}`, 'VALIDATION_ERROR', 400);
  const permissions = draft.permissions.split(/[\s,]+/).filter(Boolean);
  const body = {
    extensionKey: draft.extensionKey,
    name: draft.name,
    description: draft.description || undefined,
    category: draft.category || undefined,
    permissions: permissions.length ? permissions : undefined,
  };
  return (await call('createExtension', { body })).data;
}

/** How many matches a key field suggests: the catalog may hold thousands of extensions, so it is searched, never listed whole. */
const SUGGESTED_EXTENSIONS = 10;

/**
 * Suggestions for a field that takes an extension key (a datalist): as the key
 * is typed, the catalog is searched for it, a quarter second after the last
 * keystroke, and only the newest answer is kept. A failed search suggests nothing.
 */
export function useExtensionSuggestions(typed: () => string): Ref<Array<{ extensionKey: string; name: string }>> {
  const suggestions = ref<Array<{ extensionKey: string; name: string }>>([]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let generation = 0;
  watch(typed, (text) => {
    clearTimeout(timer);
    const current = ++generation;
    const search = text.trim();
    if (!search) {
      suggestions.value = [];
      return;
    }
    timer = setTimeout(() => {
      call('listExtensions', { query: { search, limit: SUGGESTED_EXTENSIONS } })
        .then(({ data }) => {
          if (current === generation) suggestions.value = data.map(({ extensionKey, name }) => ({ extensionKey, name }));
        })
        .catch(() => {
          if (current === generation) suggestions.value = [];
        });
    }, 250);
  });
  onScopeDispose(() => clearTimeout(timer));
  return suggestions;
}

/** Who did a catalog change, as a person: their name, or the address they had then once the account is gone. */
export const actorName = (actor: AuditRecord['actor']) => actor.fullName ?? actor.email;

/** The largest page of the audit trail: the history of an extension's versions is read in one request of each kind. */
const HISTORY_PAGE = 1000;

/**
 * What the audit trail (ADMIN only) tells of an extension's versions: who
 * published each, and why each yanked one was yanked (its latest yank). A
 * version older than the newest thousand publishes or yanks is not in it.
 */
export async function versionHistory(extensionKey: string): Promise<{ publishedBy: Map<string, string>; yankReason: Map<string, string> }> {
  const [published, yanked] = await Promise.all([
    call('listAuditRecords', { query: { extensionKey, action: 'publish', limit: HISTORY_PAGE } }),
    call('listAuditRecords', { query: { extensionKey, action: 'yank', limit: HISTORY_PAGE } }),
  ]);
  const publishedBy = new Map(published.data.map((record) => [record.version ?? '', actorName(record.actor)]));
  const yankReason = new Map<string, string>();
  // Newest first: the first yank of a version is its latest.
  for (const record of yanked.data) if (record.version && !yankReason.has(record.version)) yankReason.set(record.version, record.reason ?? '');
  return { publishedBy, yankReason };
}
