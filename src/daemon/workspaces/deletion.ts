import { conflict } from '../errors.js';
import { workspaceNotFound } from './store.js';

/** What the answer to a deletion says changed outside the workspace itself. */
export interface DeletedWorkspace {
  id: string;
  /** Extensions whose webhook.workspaceId named the workspace and was removed (only with force). */
  clearedWebhooks: string[];
}

interface Dependencies {
  workspaces: { exists(id: string): Promise<boolean>; delete(id: string, force: boolean): Promise<void> };
  webhooks: { webhooksInto(workspaceId: string): Promise<string[]>; clearWebhookWorkspace(workspaceId: string): Promise<string[]> };
}

/**
 * A workspace that inbound webhooks publish into (an extension's
 * webhook.workspaceId) is not deleted without force: their calls would fail
 * from then on, and a workspace created later under the same id would receive
 * them. With force, those settings are removed once the workspace is gone, so
 * a failed deletion leaves them as they were.
 */
export async function deleteWorkspace({ workspaces, webhooks }: Dependencies, id: string, force: boolean): Promise<DeletedWorkspace> {
  if (!(await workspaces.exists(id))) throw workspaceNotFound(id);
  const pointing = await webhooks.webhooksInto(id);
  if (pointing.length > 0 && !force) {
    throw conflict(
      `inbound webhooks of ${pointing.join(', ')} publish into workspace ${id} (webhook.workspaceId); ` +
        'point them at another workspace first, or delete with force to remove that setting',
    );
  }
  await workspaces.delete(id, force);
  return { id, clearedWebhooks: force ? await webhooks.clearWebhookWorkspace(id) : [] };
}
