import type { WorkspaceMember } from '../../contract/types.js';

interface Dependencies {
  workspaces: { get(id: string): Promise<{ members: string[] }> };
  users: { listUsers(): Promise<Array<{ id: string; email: string; fullName: string }>> };
}

/**
 * A workspace's members by name, in the workspace's order: a member who is not
 * ADMIN may not list users, yet needs to know who else is in the workspace.
 * Only the name and address are told, not roles or state. Throws NOT_FOUND.
 */
export async function namedMembers({ workspaces, users }: Dependencies, id: string): Promise<WorkspaceMember[]> {
  const { members } = await workspaces.get(id);
  const byId = new Map((await users.listUsers()).map((user) => [user.id, user]));
  return members.flatMap((userId) => {
    const user = byId.get(userId);
    return user ? [{ id: user.id, email: user.email, fullName: user.fullName }] : [];
  });
}
