import { isAdmin } from '../../auth/users.js';
import { forbidden } from '../../errors.js';
import type { HttpContext } from '../context.js';
import type { Handlers } from '../endpoint.js';

export const streamRoutes = ({ services: { streams, workspaces } }: HttpContext) =>
  ({
    streamWorkspace: async ({ params, caller, event }) => {
      await workspaces.assertExists(params.id);
      return streams.start(event.node.req.headers, event.node.res, caller, {
        workspaceId: params.id,
        stillAllowed: async (current) => {
          await workspaces.assertExists(params.id);
          await workspaces.assertMember(current.user, params.id);
        },
      });
    },
    streamAllWorkspaces: ({ caller, event }) =>
      streams.start(event.node.req.headers, event.node.res, caller, {
        workspaceId: null,
        stillAllowed: (current) => {
          if (!isAdmin(current.user)) throw forbidden('this action requires the ADMIN role');
        },
      }),
  }) satisfies Partial<Handlers>;
