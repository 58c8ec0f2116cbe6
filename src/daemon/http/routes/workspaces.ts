import { deleteWorkspace } from '../../workspaces/deletion.js';
import { namedMembers } from '../../workspaces/members.js';
import type { HttpContext } from '../context.js';
import { Reply, type Handlers } from '../endpoint.js';

export const workspaceRoutes = ({ services: { auth, workspaces, installations, subscriptions, extensionConfig } }: HttpContext) =>
  ({
    createWorkspace: ({ body }) => workspaces.create(body),
    listWorkspaces: ({ caller }) => workspaces.visibleTo(caller.user),
    getWorkspace: ({ params }) => workspaces.get(params.id),
    listMembers: ({ params }) => namedMembers({ workspaces, users: auth }, params.id),
    renameWorkspace: ({ params, body }) => workspaces.rename(params.id, body.name),
    deleteWorkspace: ({ params, query }) => deleteWorkspace({ workspaces, webhooks: extensionConfig }, params.id, query.force === 'true'),
    addMember: ({ params }) => workspaces.addMember(params.id, params.userId),
    removeMember: ({ params }) => workspaces.removeMember(params.id, params.userId),

    installExtension: ({ params, body }) => installations.install(params.id, body),
    listInstallations: ({ params }) => installations.listInstallations(params.id),
    updateInstallation: ({ params, body }) => installations.updateInstallation(params.id, params.key, body),
    uninstallExtension: ({ params }) => installations.uninstall(params.id, params.key),
    rotateInstallationToken: ({ params }) => installations.rotateToken(params.id, params.key),
    getOwnInstallation: ({ caller }) => installations.ownInstallation(caller),

    createSubscription: async ({ params, body }) => {
      const { subscription, warnings } = await subscriptions.subscribe(params.id, body);
      return new Reply(subscription, warnings.length > 0 ? { warnings } : null);
    },
    listSubscriptions: ({ params }) => subscriptions.listSubscriptions(params.id),
    deleteSubscription: ({ params }) => subscriptions.unsubscribe(params.id, params.subscriptionId),
  }) satisfies Partial<Handlers>;
