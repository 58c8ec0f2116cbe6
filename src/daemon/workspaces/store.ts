import { conflict, notFound } from '../errors.js';
import type { StoredInstallation, StoredSubscription, Workspace } from './types.js';

/**
 * What an installation's change stores with it, all or nothing: the
 * installation as it is to be, and the subscriptions its manifest wires
 * (new ones, changed ones, and the ids of those it drops).
 */
export interface InstallationChange {
  installation: StoredInstallation;
  subscribe: readonly StoredSubscription[];
  update: readonly StoredSubscription[];
  unsubscribe: readonly string[];
}

/** What the dispatcher keeps in memory: installations and subscriptions, of one workspace or of all. */
export interface WorkspaceContents {
  installations: StoredInstallation[];
  subscriptions: StoredSubscription[];
}

export const workspaceTaken = (id: string) => conflict(`workspace ${id} already exists`);
export const workspaceNotFound = (id: string) => notFound(`workspace ${id} not found`);
export const userNotFound = (id: string) => notFound(`user ${id} not found`);
export const alreadyInstalled = (workspaceId: string, extensionKey: string) =>
  conflict(`${extensionKey} is already installed in ${workspaceId}`);
export const installationNotFound = (workspaceId: string, extensionKey: string) =>
  notFound(`installation of ${extensionKey} in ${workspaceId} not found`);
export const alreadySubscribed = ({ workspaceId, eventKey, extensionKey }: Pick<StoredSubscription, 'workspaceId' | 'eventKey' | 'extensionKey'>) =>
  conflict(`${extensionKey} is already subscribed to ${eventKey} in ${workspaceId}`);
export const subscriptionNotFound = (workspaceId: string, subscriptionId: string) =>
  notFound(`subscription ${subscriptionId} not found in ${workspaceId}`);
export const stillInstalled = (workspaceId: string, extensionKeys: readonly string[]) =>
  conflict(
    `workspace ${workspaceId} has ${extensionKeys.length} installed extensions (${extensionKeys.join(', ')}); ` +
      'uninstall them first, or delete with force',
  );

/**
 * Where workspaces, their members, installations and subscriptions are kept
 * (store/file/workspaces.ts, store/postgres/workspaces.ts). Listings are in
 * the order of creation. The rules that must hold however many daemons write
 * at once are the store's: one workspace per id, one installation of an
 * extension per workspace, no duplicate subscription (as the caller defines
 * it), nothing installed into or subscribed in a workspace being deleted, and
 * no deletion without force while an extension is installed.
 */
export interface WorkspaceStore {
  /** Throws CONFLICT when the id is taken. */
  createWorkspace(workspace: Workspace): Promise<void>;
  getWorkspace(id: string): Promise<Workspace | undefined>;
  hasWorkspace(id: string): Promise<boolean>;
  /** Every workspace, or those `memberId` is a member of. */
  listWorkspaces(memberId?: string): Promise<Workspace[]>;
  isMember(workspaceId: string, userId: string): Promise<boolean>;
  /** Throws NOT_FOUND. */
  renameWorkspace(id: string, name: string): Promise<Workspace>;
  /**
   * With its members, installations and subscriptions. Throws NOT_FOUND, or
   * CONFLICT (naming them) while extensions are installed and `force` is false.
   */
  deleteWorkspace(id: string, force: boolean): Promise<void>;
  /** A member already is one once. Throws NOT_FOUND for the workspace, or for a user a shared store knows is gone. */
  addMember(workspaceId: string, userId: string): Promise<Workspace>;
  /** Throws NOT_FOUND for the workspace; a user who is no member is nothing to do. */
  removeMember(workspaceId: string, userId: string): Promise<void>;
  /** A deleted user leaves every workspace. */
  removeMemberEverywhere(userId: string): Promise<void>;

  listInstallations(workspaceId: string): Promise<StoredInstallation[]>;
  /** The installation whose token has this hash (read from the store: a rotation on any daemon holds at once). */
  findInstallationByTokenHash(tokenHash: string): Promise<StoredInstallation | undefined>;
  getInstallation(workspaceId: string, extensionKey: string): Promise<StoredInstallation | undefined>;
  /**
   * With the subscriptions its manifest wires, together. Throws CONFLICT when
   * the extension is installed there already, NOT_FOUND when the workspace is gone.
   */
  install(installation: StoredInstallation, subscriptions?: readonly StoredSubscription[]): Promise<void>;
  /**
   * Read-modify-write of one installation: `change` gets the current one and
   * the extension's subscriptions in the workspace, with no other change of
   * the installation in between (on any daemon), and returns what to store,
   * or null to store nothing; if it throws, nothing is stored. Resolves with
   * the installation as stored. Throws NOT_FOUND.
   */
  updateInstallation(
    workspaceId: string,
    extensionKey: string,
    change: (current: StoredInstallation, subscriptions: readonly StoredSubscription[]) => InstallationChange | null,
  ): Promise<StoredInstallation>;
  /** Throws NOT_FOUND. */
  uninstall(workspaceId: string, extensionKey: string): Promise<void>;

  listSubscriptions(workspaceId: string): Promise<StoredSubscription[]>;
  getSubscription(workspaceId: string, subscriptionId: string): Promise<StoredSubscription | undefined>;
  /** The subscriptions of (workspace, event key) that are enabled, of an extension installed there and enabled. */
  activeSubscriptions(workspaceId: string, eventKey: string): Promise<StoredSubscription[]>;
  /**
   * Throws CONFLICT when `isDuplicate` holds for a subscription of the same
   * workspace and event key, checked with no other subscription of that pair
   * stored in between (on any daemon); NOT_FOUND when the workspace is gone.
   */
  subscribe(subscription: StoredSubscription, isDuplicate: (other: StoredSubscription) => boolean): Promise<void>;
  /**
   * Read-modify-write of one subscription, as updateInstallation; what it is
   * (id, workspace, event key, extension, kind, createdAt) stays. Throws NOT_FOUND.
   */
  updateSubscription(
    workspaceId: string,
    subscriptionId: string,
    change: (current: StoredSubscription) => StoredSubscription | null,
  ): Promise<StoredSubscription>;
  /** Throws NOT_FOUND. */
  unsubscribe(workspaceId: string, subscriptionId: string): Promise<void>;

  /** The installations and subscriptions of one workspace (null: of every workspace). */
  contents(workspaceId: string | null): Promise<WorkspaceContents>;
  /**
   * `listener` learns the id of each workspace whose installations or
   * subscriptions another daemon sharing the store changed (or which it
   * deleted), or null when changes may have been missed (a lost connection).
   * A store no other daemon writes to never calls it.
   */
  onChange(listener: (workspaceId: string | null) => void): void;
  /** Once every write made so far is durable. */
  close(): Promise<void>;
}
