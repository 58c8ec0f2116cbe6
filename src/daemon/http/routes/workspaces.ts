import * as v from 'valibot';
import { EventKey, HttpUrl, jsonObject, NonEmptyString, Slug } from '../../../contract/schemas.js';
import { deleteWorkspace } from '../../workspaces/deletion.js';
import { SUBSCRIBER_KINDS } from '../../workspaces/types.js';
import { isVersionRequest } from '../../workspaces/versions.js';
import type { RouteModule } from '../context.js';
import { Reply } from '../endpoint.js';
import { workspaceMember } from '../access.js';

const VersionRequest = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(256),
  v.check(isVersionRequest, 'must be a version, "latest" or a semver range such as ^1.2, ~1.4 or 1.x'),
);

const WorkspaceParams = v.object({ id: Slug });
const MemberParams = v.object({ id: Slug, userId: v.pipe(v.string(), v.uuid('must be a user id')) });
const InstallationParams = v.object({ id: Slug, key: Slug });
const SubscriptionParams = v.object({ id: Slug, subscriptionId: v.pipe(v.string(), v.uuid('must be a subscription id')) });

const CreateWorkspaceBody = jsonObject({ id: Slug, name: NonEmptyString(200) });
const RenameWorkspaceBody = jsonObject({ name: NonEmptyString(200) });
const DeleteWorkspaceQuery = v.object({
  force: v.optional(v.picklist(['true', 'false'], 'must be true or false')),
});
const InstallBody = jsonObject({ extensionKey: Slug, version: v.optional(VersionRequest) });
const UpdateInstallationBody = v.pipe(
  jsonObject({ enabled: v.optional(v.boolean()), version: v.optional(VersionRequest), allowDowngrade: v.optional(v.boolean()) }),
  v.check((body) => body.enabled !== undefined || body.version !== undefined, 'must change enabled or version'),
);
const SubscribeBody = jsonObject({
  eventKey: EventKey,
  extensionKey: Slug,
  kind: v.picklist(SUBSCRIBER_KINDS, 'must be EXTERNAL_SERVICE or IN_PROCESS'),
  serviceBaseUrl: v.optional(HttpUrl),
});

export const workspaceRoutes: RouteModule = (routes, { endpoint, services: { workspaces, extensionConfig } }) => {
  const member = workspaceMember(workspaces);

  routes.post(
    '/api/admin/workspaces',
    endpoint({ access: 'admin', body: CreateWorkspaceBody, status: 201, handle: ({ body }) => workspaces.create(body) }),
  );
  routes.get('/api/workspaces', endpoint({ access: 'user', handle: ({ caller }) => workspaces.visibleTo(caller.user) }));
  routes.get(
    '/api/workspaces/:id',
    endpoint({ access: 'user', authorize: member, params: WorkspaceParams, handle: ({ params }) => workspaces.get(params.id) }),
  );
  routes.patch(
    '/api/admin/workspaces/:id',
    endpoint({
      access: 'admin',
      params: WorkspaceParams,
      body: RenameWorkspaceBody,
      handle: ({ params, body }) => workspaces.rename(params.id, body.name),
    }),
  );
  routes.delete(
    '/api/admin/workspaces/:id',
    endpoint({
      access: 'admin',
      params: WorkspaceParams,
      query: DeleteWorkspaceQuery,
      handle: ({ params, query }) => deleteWorkspace({ workspaces, webhooks: extensionConfig }, params.id, query.force === 'true'),
    }),
  );
  routes.put(
    '/api/admin/workspaces/:id/members/:userId',
    endpoint({
      access: 'admin',
      params: MemberParams,
      handle: ({ params }) => workspaces.addMember(params.id, params.userId),
    }),
  );
  routes.delete(
    '/api/admin/workspaces/:id/members/:userId',
    endpoint({
      access: 'admin',
      params: MemberParams,
      status: 204,
      handle: ({ params }) => workspaces.removeMember(params.id, params.userId),
    }),
  );

  routes.post(
    '/api/workspaces/:id/extensions',
    endpoint({
      access: 'admin',
      params: WorkspaceParams,
      body: InstallBody,
      status: 201,
      handle: ({ params, body }) => workspaces.install(params.id, body),
    }),
  );
  routes.get(
    '/api/workspaces/:id/extensions',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      handle: ({ params }) => workspaces.listInstallations(params.id),
    }),
  );
  routes.patch(
    '/api/workspaces/:id/extensions/:key',
    endpoint({
      access: 'admin',
      params: InstallationParams,
      body: UpdateInstallationBody,
      handle: ({ params, body }) => workspaces.updateInstallation(params.id, params.key, body),
    }),
  );
  routes.delete(
    '/api/workspaces/:id/extensions/:key',
    endpoint({
      access: 'admin',
      params: InstallationParams,
      status: 204,
      handle: ({ params }) => workspaces.uninstall(params.id, params.key),
    }),
  );

  routes.post(
    '/api/workspaces/:id/subscriptions',
    endpoint({
      access: 'admin',
      params: WorkspaceParams,
      body: SubscribeBody,
      status: 201,
      handle: async ({ params, body }) => {
        const { subscription, warnings } = await workspaces.subscribe(params.id, body);
        return new Reply(subscription, warnings.length > 0 ? { warnings } : null);
      },
    }),
  );
  routes.get(
    '/api/workspaces/:id/subscriptions',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      handle: ({ params }) => workspaces.listSubscriptions(params.id),
    }),
  );
  routes.delete(
    '/api/workspaces/:id/subscriptions/:subscriptionId',
    endpoint({
      access: 'admin',
      params: SubscriptionParams,
      status: 204,
      handle: ({ params }) => workspaces.unsubscribe(params.id, params.subscriptionId),
    }),
  );
};
