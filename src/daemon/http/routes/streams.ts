import * as v from 'valibot';
import { isAdmin } from '../../auth/users.js';
import { forbidden } from '../../errors.js';
import { Slug } from '../../../contract/schemas.js';
import type { RouteModule } from '../context.js';
import { workspaceMember } from '../access.js';

const WorkspaceParams = v.object({ id: Slug });
const SSE = {
  contentType: 'text/event-stream',
  description:
    'server-sent events of the activity feed (`id`, `event`, `data` per item); send Last-Event-ID to resume. ' +
    'An event whose payload is over 16 KiB of JSON comes without `payload` and with `payloadBytes`.',
};

export const streamRoutes: RouteModule = (routes, { endpoint, services }) => {
  const { streams } = services;
  const member = workspaceMember(services.workspaces);

  routes.get(
    '/api/workspaces/:id/stream',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      answers: SSE,
      handle: async ({ params, caller, event }) => {
        await services.workspaces.assertExists(params.id);
        return streams.start(event.node.req.headers, event.node.res, caller, {
          workspaceId: params.id,
          stillAllowed: async (current) => {
            await services.workspaces.assertExists(params.id);
            await member(current, { id: params.id });
          },
        });
      },
    }),
  );
  routes.get(
    '/api/admin/stream',
    endpoint({
      access: 'admin',
      answers: SSE,
      handle: ({ caller, event }) =>
        streams.start(event.node.req.headers, event.node.res, caller, {
          workspaceId: null,
          stillAllowed: (current) => {
            if (!isAdmin(current.user)) throw forbidden('this action requires the ADMIN role');
          },
        }),
    }),
  );
};

