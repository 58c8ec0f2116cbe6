import { join } from 'node:path';
import { inactivityOf, type StoredInstallation, type StoredSubscription, type Workspace } from '../../workspaces/types.js';
import {
  alreadyInstalled,
  alreadySubscribed,
  installationNotFound,
  stillInstalled,
  type InstallationChange,
  subscriptionNotFound,
  workspaceTaken,
  workspaceNotFound,
  type WorkspaceContents,
  type WorkspaceStore,
} from '../../workspaces/store.js';
import { Collection } from '../collection.js';

interface WorkspacesDocument {
  schemaVersion: 1;
  workspaces: Workspace[];
  installations: StoredInstallation[];
  subscriptions: StoredSubscription[];
}

const topic = (workspaceId: string, eventKey: string) => `${workspaceId}\u0000${eventKey}`;
const installationKey = (workspaceId: string, extensionKey: string) => `${workspaceId}\u0000${extensionKey}`;

/**
 * workspaces.json: workspaces with their members, installations and
 * subscriptions in one document, all of which change rarely, with in-memory
 * indexes (publishing finds its subscriptions by topic). One daemon owns the
 * data directory, and each change checks and applies in one synchronous step,
 * so the store's rules need no locking. Records are replaced, never changed in
 * place: what a reader was given stays as it was.
 */
export class FileWorkspaceStore implements WorkspaceStore {
  private workspaces = new Map<string, Workspace>();
  private installations = new Map<string, StoredInstallation>();
  private byTokenHash = new Map<string, StoredInstallation>();
  private subscriptions = new Map<string, StoredSubscription>();
  private byTopic = new Map<string, StoredSubscription[]>();

  private constructor(private readonly collection: Collection<WorkspacesDocument>) {
    this.reindex();
    collection.onReset(() => this.reindex());
  }

  static async open(dataDir: string): Promise<FileWorkspaceStore> {
    const collection = await Collection.open<WorkspacesDocument>({
      file: join(dataDir, 'workspaces.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, workspaces: [], installations: [], subscriptions: [] }),
    });
    return new FileWorkspaceStore(collection);
  }

  // Workspaces and members

  async createWorkspace(workspace: Workspace): Promise<void> {
    await this.collection.update((data) => {
      if (this.workspaces.has(workspace.id)) throw workspaceTaken(workspace.id);
      data.workspaces.push(workspace);
      this.workspaces.set(workspace.id, workspace);
    });
  }

  async getWorkspace(id: string): Promise<Workspace | undefined> {
    return this.workspaces.get(id);
  }

  async hasWorkspace(id: string): Promise<boolean> {
    return this.workspaces.has(id);
  }

  async listWorkspaces(memberId?: string): Promise<Workspace[]> {
    const all = this.collection.data.workspaces;
    return memberId === undefined ? [...all] : all.filter((workspace) => workspace.members.includes(memberId));
  }

  async isMember(workspaceId: string, userId: string): Promise<boolean> {
    return this.workspaces.get(workspaceId)?.members.includes(userId) ?? false;
  }

  renameWorkspace(id: string, name: string): Promise<Workspace> {
    return this.replaceWorkspace(id, (workspace) => ({ ...workspace, name }));
  }

  async deleteWorkspace(id: string, force: boolean): Promise<void> {
    await this.collection.update((data) => {
      if (!this.workspaces.has(id)) throw workspaceNotFound(id);
      const installed = data.installations.filter((installation) => installation.workspaceId === id);
      if (installed.length > 0 && !force) throw stillInstalled(id, installed.map((installation) => installation.extensionKey));
      data.workspaces = data.workspaces.filter((workspace) => workspace.id !== id);
      data.installations = data.installations.filter((installation) => installation.workspaceId !== id);
      data.subscriptions = data.subscriptions.filter((subscription) => subscription.workspaceId !== id);
      this.reindex();
    });
  }

  async addMember(workspaceId: string, userId: string): Promise<Workspace> {
    return this.replaceWorkspace(workspaceId, (workspace) =>
      workspace.members.includes(userId) ? null : { ...workspace, members: [...workspace.members, userId] },
    );
  }

  async removeMember(workspaceId: string, userId: string): Promise<void> {
    await this.replaceWorkspace(workspaceId, (workspace) =>
      workspace.members.includes(userId) ? { ...workspace, members: workspace.members.filter((member) => member !== userId) } : null,
    );
  }

  async removeMemberEverywhere(userId: string): Promise<void> {
    if (!this.collection.data.workspaces.some((workspace) => workspace.members.includes(userId))) return;
    await this.collection.update((data) => {
      data.workspaces = data.workspaces.map((workspace) =>
        workspace.members.includes(userId) ? { ...workspace, members: workspace.members.filter((member) => member !== userId) } : workspace,
      );
      this.workspaces = new Map(data.workspaces.map((workspace) => [workspace.id, workspace]));
    });
  }

  // Installations

  async listInstallations(workspaceId: string): Promise<StoredInstallation[]> {
    return this.collection.data.installations.filter((installation) => installation.workspaceId === workspaceId);
  }

  async findInstallationByTokenHash(tokenHash: string): Promise<StoredInstallation | undefined> {
    return this.byTokenHash.get(tokenHash);
  }

  async getInstallation(workspaceId: string, extensionKey: string): Promise<StoredInstallation | undefined> {
    return this.installations.get(installationKey(workspaceId, extensionKey));
  }

  async install(installation: StoredInstallation, subscriptions: readonly StoredSubscription[] = []): Promise<void> {
    const key = installationKey(installation.workspaceId, installation.extensionKey);
    await this.collection.update((data) => {
      if (!this.workspaces.has(installation.workspaceId)) throw workspaceNotFound(installation.workspaceId);
      if (this.installations.has(key)) throw alreadyInstalled(installation.workspaceId, installation.extensionKey);
      data.installations.push(installation);
      this.installations.set(key, installation);
      if (installation.tokenHash) this.byTokenHash.set(installation.tokenHash, installation);
      if (subscriptions.length === 0) return;
      data.subscriptions.push(...subscriptions);
      for (const subscription of subscriptions) this.indexSubscription(subscription);
    });
  }

  async updateInstallation(
    workspaceId: string,
    extensionKey: string,
    change: (current: StoredInstallation, subscriptions: readonly StoredSubscription[]) => InstallationChange | null,
  ): Promise<StoredInstallation> {
    const key = installationKey(workspaceId, extensionKey);
    return this.collection.update((data) => {
      const current = this.installations.get(key);
      if (!current) throw installationNotFound(workspaceId, extensionKey);
      const own = data.subscriptions.filter((subscription) => subscription.workspaceId === workspaceId && subscription.extensionKey === extensionKey);
      const next = change(current, own);
      if (!next) return current;
      data.installations[data.installations.indexOf(current)] = next.installation;
      this.installations.set(key, next.installation);
      if (current.tokenHash) this.byTokenHash.delete(current.tokenHash);
      if (next.installation.tokenHash) this.byTokenHash.set(next.installation.tokenHash, next.installation);
      if (next.subscribe.length + next.update.length + next.unsubscribe.length > 0) {
        const replaced = new Map(next.update.map((subscription) => [subscription.id, subscription]));
        const dropped = new Set(next.unsubscribe);
        data.subscriptions = [
          ...data.subscriptions.filter((subscription) => !dropped.has(subscription.id)).map((subscription) => replaced.get(subscription.id) ?? subscription),
          ...next.subscribe,
        ];
        this.reindexSubscriptions();
      }
      return next.installation;
    });
  }

  async uninstall(workspaceId: string, extensionKey: string): Promise<void> {
    const key = installationKey(workspaceId, extensionKey);
    await this.collection.update((data) => {
      const current = this.installations.get(key);
      if (!current) throw installationNotFound(workspaceId, extensionKey);
      data.installations = data.installations.filter((installation) => installation !== current);
      this.installations.delete(key);
      if (current.tokenHash) this.byTokenHash.delete(current.tokenHash);
    });
  }

  // Subscriptions

  async listSubscriptions(workspaceId: string): Promise<StoredSubscription[]> {
    return this.collection.data.subscriptions.filter((subscription) => subscription.workspaceId === workspaceId);
  }

  async getSubscription(workspaceId: string, subscriptionId: string): Promise<StoredSubscription | undefined> {
    const subscription = this.subscriptions.get(subscriptionId);
    return subscription?.workspaceId === workspaceId ? subscription : undefined;
  }

  async activeSubscriptions(workspaceId: string, eventKey: string): Promise<StoredSubscription[]> {
    return (this.byTopic.get(topic(workspaceId, eventKey)) ?? []).filter(
      (subscription) => inactivityOf(subscription, this.installations.get(installationKey(workspaceId, subscription.extensionKey))) === null,
    );
  }

  async subscribe(subscription: StoredSubscription, isDuplicate: (other: StoredSubscription) => boolean): Promise<void> {
    await this.collection.update((data) => {
      if (!this.workspaces.has(subscription.workspaceId)) throw workspaceNotFound(subscription.workspaceId);
      if ((this.byTopic.get(topic(subscription.workspaceId, subscription.eventKey)) ?? []).some(isDuplicate)) {
        throw alreadySubscribed(subscription);
      }
      data.subscriptions.push(subscription);
      this.indexSubscription(subscription);
    });
  }

  updateSubscription(
    workspaceId: string,
    subscriptionId: string,
    change: (current: StoredSubscription) => StoredSubscription | null,
  ): Promise<StoredSubscription> {
    return this.collection.update((data) => {
      const current = this.subscriptions.get(subscriptionId);
      if (current?.workspaceId !== workspaceId) throw subscriptionNotFound(workspaceId, subscriptionId);
      const next = change(current);
      if (!next) return current;
      data.subscriptions[data.subscriptions.indexOf(current)] = next;
      this.subscriptions.set(subscriptionId, next);
      const key = topic(workspaceId, current.eventKey);
      this.byTopic.set(key, this.byTopic.get(key)!.map((subscription) => (subscription === current ? next : subscription)));
      return next;
    });
  }

  async unsubscribe(workspaceId: string, subscriptionId: string): Promise<void> {
    await this.collection.update((data) => {
      if (this.subscriptions.get(subscriptionId)?.workspaceId !== workspaceId) throw subscriptionNotFound(workspaceId, subscriptionId);
      data.subscriptions = data.subscriptions.filter((subscription) => subscription.id !== subscriptionId);
      this.reindexSubscriptions();
    });
  }

  async contents(workspaceId: string | null): Promise<WorkspaceContents> {
    const { installations, subscriptions } = this.collection.data;
    if (workspaceId === null) return { installations: [...installations], subscriptions: [...subscriptions] };
    return {
      installations: installations.filter((installation) => installation.workspaceId === workspaceId),
      subscriptions: subscriptions.filter((subscription) => subscription.workspaceId === workspaceId),
    };
  }

  /** The data directory is this daemon's alone: nobody else changes it. */
  onChange(): void {}

  close(): Promise<void> {
    return this.collection.flush();
  }

  /** `change` returns the workspace to store in its place, or null to store nothing. */
  private replaceWorkspace(id: string, change: (current: Workspace) => Workspace | null): Promise<Workspace> {
    return this.collection.update((data) => {
      const current = this.workspaces.get(id);
      if (!current) throw workspaceNotFound(id);
      const next = change(current);
      if (!next) return current;
      data.workspaces[data.workspaces.indexOf(current)] = next;
      this.workspaces.set(id, next);
      return next;
    });
  }

  private indexSubscription(subscription: StoredSubscription): void {
    this.subscriptions.set(subscription.id, subscription);
    const key = topic(subscription.workspaceId, subscription.eventKey);
    this.byTopic.set(key, [...(this.byTopic.get(key) ?? []), subscription]);
  }

  private reindexSubscriptions(): void {
    this.subscriptions = new Map();
    this.byTopic = new Map();
    for (const subscription of this.collection.data.subscriptions) this.indexSubscription(subscription);
  }

  private reindex(): void {
    const data = this.collection.data;
    this.workspaces = new Map(data.workspaces.map((workspace) => [workspace.id, workspace]));
    this.installations = new Map(data.installations.map((i) => [installationKey(i.workspaceId, i.extensionKey), i]));
    this.byTokenHash = new Map(data.installations.filter((i) => i.tokenHash).map((i) => [i.tokenHash!, i]));
    this.reindexSubscriptions();
  }
}
