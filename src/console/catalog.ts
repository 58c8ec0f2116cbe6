import { problemWith, Slug } from '../contract/schemas';
import type { ExtensionDetail } from '../contract/types';
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
