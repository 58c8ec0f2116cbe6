import type { Caller } from '../auth/service.js';
import type { WorkspaceService } from '../workspaces/service.js';

/** `authorize` for routes under /api/workspaces/:id: ADMINs and members of that workspace (403 otherwise). */
export const workspaceMember =
  (workspaces: WorkspaceService) =>
  (caller: Caller, params: Record<string, string>): Promise<void> =>
    workspaces.assertMember(caller.user, params.id);
