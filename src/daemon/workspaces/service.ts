import { forbidden } from '../errors.js';
import { isAdmin, type UserRecord } from '../auth/users.js';
import type { ReadBack } from '../read-back.js';
import { userNotFound, workspaceNotFound, type WorkspaceStore } from './store.js';
import type { Workspace } from './types.js';

/**
 * Workspaces, their members, and who may act in them. Requests read the
 * store (membership is checked on every request to a workspace), so a change
 * acknowledged by one daemon holds for the next request to any other.
 */
export class WorkspaceService {
  /** What else keeps records by workspace (dead letters) forgets a deleted one. */
  private readonly deletionListeners: Array<(workspaceId: string) => Promise<void>> = [];
  /** What holds on to a membership (live streams) checks it again at once. */
  private readonly accessListeners: Array<(userId: string | null) => void> = [];

  constructor(
    private readonly store: WorkspaceStore,
    /** A deletion takes the workspace's subscriptions with it: memory is read back. */
    private readonly readBack: ReadBack<string>,
    private readonly users: { get(id: string): Promise<unknown> },
  ) {}


  async create(input: { id: string; name: string }): Promise<Workspace> {
    const workspace: Workspace = { id: input.id, name: input.name, members: [], createdAt: new Date().toISOString() };
    await this.store.createWorkspace(workspace);
    return workspace;
  }

  async get(id: string): Promise<Workspace> {
    const workspace = await this.store.getWorkspace(id);
    if (!workspace) throw workspaceNotFound(id);
    return workspace;
  }

  /** 404 unless the workspace exists. */
  async assertExists(id: string): Promise<void> {
    if (!(await this.store.hasWorkspace(id))) throw workspaceNotFound(id);
  }

  exists(id: string): Promise<boolean> {
    return this.store.hasWorkspace(id);
  }

  rename(id: string, name: string): Promise<Workspace> {
    return this.store.renameWorkspace(id, name);
  }

  /**
   * Refused while extensions are installed, unless forced: then its
   * installations and subscriptions go with it (pending deliveries to them end
   * as for a deleted subscription), and the deletion listeners (dead letters)
   * run. Recorded events stay in the event log until retention removes them.
   */
  async delete(id: string, force: boolean): Promise<void> {
    await this.readBack.storing(id, this.store.deleteWorkspace(id, force));
    for (const listener of this.deletionListeners) await listener(id);
    for (const listener of this.accessListeners) listener(null);
  }

  onWorkspaceDeleted(listener: (workspaceId: string) => Promise<void>): void {
    this.deletionListeners.push(listener);
  }

  /** A member left (the user's id), or a workspace went (null: anyone may have lost access). */
  onAccessChanged(listener: (userId: string | null) => void): void {
    this.accessListeners.push(listener);
  }

  /** ADMIN: every workspace; anyone else: those they are a member of. */
  visibleTo(user: UserRecord): Promise<Workspace[]> {
    return isAdmin(user) ? this.store.listWorkspaces() : this.store.listWorkspaces(user.id);
  }

  /** 403 unless ADMIN or a member. Runs before validation, so the id may be anything. */
  async assertMember(user: UserRecord, workspaceId: string | undefined): Promise<void> {
    if (isAdmin(user)) return;
    if (workspaceId === undefined || !(await this.store.isMember(workspaceId, user.id))) {
      throw forbidden('this needs the ADMIN role or membership of the workspace');
    }
  }

  async addMember(workspaceId: string, userId: string): Promise<Workspace> {
    await this.assertExists(workspaceId); // an unknown workspace is the 404 first
    if (!(await this.users.get(userId))) throw userNotFound(userId);
    return this.store.addMember(workspaceId, userId);
  }

  async removeMember(workspaceId: string, userId: string): Promise<void> {
    await this.store.removeMember(workspaceId, userId);
    for (const listener of this.accessListeners) listener(userId);
  }

  /** A deleted user leaves every workspace. */
  forgetMember(userId: string): Promise<void> {
    return this.store.removeMemberEverywhere(userId);
  }
}
