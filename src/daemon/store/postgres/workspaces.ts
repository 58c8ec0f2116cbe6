import { inactivityOf, type StoredInstallation, type StoredSubscription, type SubscriberKind, type Workspace } from '../../workspaces/types.js';
import {
  alreadyInstalled,
  alreadySubscribed,
  installationNotFound,
  type InstallationChange,
  stillInstalled,
  subscriptionNotFound,
  userNotFound,
  workspaceTaken,
  workspaceNotFound,
  type WorkspaceContents,
  type WorkspaceStore,
} from '../../workspaces/store.js';
import { BatchedRead } from './batched-read.js';
import type { ChangeFeed } from './change-feed.js';
import { isForeignKeyViolation, isUniqueViolation, qualified, type Database, type Queryable } from './database.js';

const TOPIC = 'workspaces';
/** First key of the advisory lock a new subscription takes for its (workspace, event key), to look for duplicates. */
const SUBSCRIBE_LOCK = 0x73756273; // "subs"

interface WorkspaceRow {
  id: string;
  name: string;
  created_at: Date;
  members: string[];
}

interface InstallationRow {
  workspace_id: string;
  extension_key: string;
  version: string;
  enabled: boolean;
  installed_at: Date;
  granted_permissions: string[];
  token_hash: string | null;
}

interface SubscriptionRow {
  id: string;
  workspace_id: string;
  event_key: string;
  extension_key: string;
  kind: SubscriberKind;
  service_base_url: string | null;
  sealed_service_base_url: string | null;
  sealed_signing_secret: string;
  sealed_previous_signing_secret: string | null;
  /** bigint: pg reads it as text. */
  previous_secret_until: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: Date;
  delivery_path: string | null;
}

/** Workspaces with their members in the order they were added, in one query. */
const SELECT_WORKSPACES = `
  SELECT w.id, w.name, w.created_at,
         coalesce(array_agg(m.user_id ORDER BY m.seq) FILTER (WHERE m.user_id IS NOT NULL), '{}') AS members
  FROM workspaces w LEFT JOIN workspace_members m ON m.workspace_id = w.id`;
const INSTALLATION_COLUMNS = 'workspace_id, extension_key, version, enabled, installed_at, granted_permissions, token_hash';
const SUBSCRIPTION_COLUMNS = `id, workspace_id, event_key, extension_key, kind, service_base_url, sealed_service_base_url,
  sealed_signing_secret, sealed_previous_signing_secret, previous_secret_until, enabled, disabled_reason, failing_since, created_at,
  delivery_path`;

const toWorkspace = (row: WorkspaceRow): Workspace => ({
  id: row.id,
  name: row.name,
  members: row.members,
  createdAt: row.created_at.toISOString(),
});

const toInstallation = (row: InstallationRow): StoredInstallation => ({
  workspaceId: row.workspace_id,
  extensionKey: row.extension_key,
  version: row.version,
  enabled: row.enabled,
  installedAt: row.installed_at.toISOString(),
  grantedPermissions: row.granted_permissions,
  ...(row.token_hash === null ? {} : { tokenHash: row.token_hash }),
});

const toSubscription = (row: SubscriptionRow): StoredSubscription => ({
  id: row.id,
  workspaceId: row.workspace_id,
  eventKey: row.event_key,
  extensionKey: row.extension_key,
  kind: row.kind,
  serviceBaseUrl: row.service_base_url,
  createdAt: row.created_at.toISOString(),
  enabled: row.enabled,
  disabledReason: row.disabled_reason,
  sealedSigningSecret: row.sealed_signing_secret,
  ...(row.sealed_service_base_url === null ? {} : { sealedServiceBaseUrl: row.sealed_service_base_url }),
  ...(row.sealed_previous_signing_secret === null ? {} : { sealedPreviousSigningSecret: row.sealed_previous_signing_secret }),
  ...(row.previous_secret_until === null ? {} : { previousSecretUntil: Number(row.previous_secret_until) }),
  ...(row.failing_since === null ? {} : { failingSince: Number(row.failing_since) }),
  ...(row.delivery_path === null ? {} : { deliveryPath: row.delivery_path }),
});

/** One subscription's row, as INSERT INTO subscriptions (SUBSCRIPTION_COLUMNS) takes it. */
const subscriptionValues = (subscription: StoredSubscription): unknown[] => [
  subscription.id,
  subscription.workspaceId,
  subscription.eventKey,
  subscription.extensionKey,
  subscription.kind,
  subscription.serviceBaseUrl,
  subscription.sealedServiceBaseUrl ?? null,
  subscription.sealedSigningSecret,
  subscription.sealedPreviousSigningSecret ?? null,
  subscription.previousSecretUntil ?? null,
  subscription.enabled !== false,
  subscription.disabledReason ?? null,
  subscription.failingSince ?? null,
  subscription.createdAt,
  subscription.deliveryPath ?? null,
];
const INSERT_SUBSCRIPTION = `INSERT INTO subscriptions (${SUBSCRIPTION_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`;
/** What a subscription's change may change: not what it is (id, workspace, event key, extension, kind, createdAt). */
const UPDATE_SUBSCRIPTION = `UPDATE subscriptions SET service_base_url = $2, sealed_service_base_url = $3, sealed_signing_secret = $4,
  sealed_previous_signing_secret = $5, previous_secret_until = $6, enabled = $7, disabled_reason = $8, failing_since = $9, delivery_path = $10
  WHERE id = $1`;
const updatedSubscriptionValues = (next: StoredSubscription): unknown[] => [
  next.id,
  next.serviceBaseUrl,
  next.sealedServiceBaseUrl ?? null,
  next.sealedSigningSecret,
  next.sealedPreviousSigningSecret ?? null,
  next.previousSecretUntil ?? null,
  next.enabled !== false,
  next.disabledReason ?? null,
  next.failingSince ?? null,
  next.deliveryPath ?? null,
];

const INSTALLATION_BY_TOKEN = {
  name: 'installation-by-token',
  text: `SELECT ${INSTALLATION_COLUMNS} FROM installations WHERE token_hash = $1`,
};

/** Every publish asks whether its workspace exists, then which subscriptions receive its event. */
const EXISTING_WORKSPACES = { name: 'existing-workspaces', text: 'SELECT id FROM workspaces WHERE id = ANY($1::text[])' };
const ACTIVE_SUBSCRIPTIONS = {
  name: 'active-subscriptions',
  // Every subscription of the pairs with its installation's flag: which are active is inactivityOf's to say.
  text: `SELECT ${qualified(SUBSCRIPTION_COLUMNS, 's')}, i.enabled AS installation_enabled FROM subscriptions s
         LEFT JOIN installations i ON i.workspace_id = s.workspace_id AND i.extension_key = s.extension_key
         WHERE (s.workspace_id, s.event_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
         ORDER BY s.seq`,
};

/**
 * The `workspaces`, `workspace_members`, `installations` and `subscriptions`
 * tables. One installation per extension and workspace is the primary key;
 * foreign keys refuse what would be installed, subscribed or added as a member
 * in a workspace being deleted (or for a deleted user). Deleting without force
 * locks the workspace's row, which every insert of its installations waits for
 * (the foreign key check shares that lock), and looks for installations after
 * it: an installation acknowledged at the same moment is either seen and
 * refuses the deletion, or refused itself. Duplicate subscriptions are looked
 * for under an advisory lock of their (workspace, event key), as a rule across
 * rows. Other daemons hear of each change of installations and subscriptions
 * (what they keep in memory) by NOTIFY, sent at commit.
 */
export class PostgresWorkspaceStore implements WorkspaceStore {
  private readonly existing: BatchedRead<string, true>;
  /** By workspace and event key. */
  private readonly active: BatchedRead<[string, string], StoredSubscription[]>;

  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
  ) {
    this.existing = new BatchedRead(
      (id) => id,
      async (ids) => {
        const { rows } = await this.database.query<{ id: string }>(EXISTING_WORKSPACES, [ids]);
        return new Map(rows.map((row) => [row.id, true]));
      },
    );
    this.active = new BatchedRead(
      (key) => JSON.stringify(key),
      async (keys) => {
        const { rows } = await this.database.query<SubscriptionRow & { installation_enabled: boolean | null }>(ACTIVE_SUBSCRIPTIONS, [
          keys.map(([workspaceId]) => workspaceId),
          keys.map(([, eventKey]) => eventKey),
        ]);
        const found = new Map<string, StoredSubscription[]>();
        for (const row of rows) {
          const subscription = toSubscription(row);
          if (inactivityOf(subscription, row.installation_enabled === null ? undefined : { enabled: row.installation_enabled }) !== null) continue;
          const key = JSON.stringify([row.workspace_id, row.event_key]);
          const list = found.get(key);
          if (list) list.push(subscription);
          else found.set(key, [subscription]);
        }
        return found;
      },
    );
  }

  // Workspaces and members

  async createWorkspace(workspace: Workspace): Promise<void> {
    try {
      await this.database.transaction(async (tx) => {
        await tx.query('INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)', [workspace.id, workspace.name, workspace.createdAt]);
        for (const member of workspace.members) await insertMember(tx, workspace.id, member);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'workspaces_pkey')) throw workspaceTaken(workspace.id);
      throw error;
    }
  }

  async getWorkspace(id: string): Promise<Workspace | undefined> {
    return getWorkspace(this.database, id);
  }

  async hasWorkspace(id: string): Promise<boolean> {
    return (await this.existing.read(id)) === true;
  }

  async listWorkspaces(memberId?: string): Promise<Workspace[]> {
    const { rows } = await this.database.query<WorkspaceRow>(
      `${SELECT_WORKSPACES}
       WHERE $1::text IS NULL OR EXISTS (SELECT 1 FROM workspace_members x WHERE x.workspace_id = w.id AND x.user_id = $1)
       GROUP BY w.id ORDER BY w.seq`,
      [memberId ?? null],
    );
    return rows.map(toWorkspace);
  }

  async isMember(workspaceId: string, userId: string): Promise<boolean> {
    const { rowCount } = await this.database.query('SELECT 1 FROM workspace_members WHERE workspace_id = $1 AND user_id = $2', [workspaceId, userId]);
    return rowCount === 1;
  }

  renameWorkspace(id: string, name: string): Promise<Workspace> {
    return this.database.transaction(async (tx) => {
      const { rowCount } = await tx.query('UPDATE workspaces SET name = $2 WHERE id = $1', [id, name]);
      if (!rowCount) throw workspaceNotFound(id);
      return (await getWorkspace(tx, id))!;
    });
  }

  async deleteWorkspace(id: string, force: boolean): Promise<void> {
    await this.database.transaction(async (tx) => {
      const locked = await tx.query('SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE', [id]);
      if (!locked.rowCount) throw workspaceNotFound(id);
      if (!force) {
        const { rows } = await tx.query<{ extension_key: string }>('SELECT extension_key FROM installations WHERE workspace_id = $1 ORDER BY seq', [id]);
        if (rows.length > 0) throw stillInstalled(id, rows.map((row) => row.extension_key));
      }
      await tx.query('DELETE FROM workspaces WHERE id = $1', [id]);
      await this.feed.notify(tx, TOPIC, id);
    });
  }

  async addMember(workspaceId: string, userId: string): Promise<Workspace> {
    return this.database.transaction(async (tx) => {
      await insertMember(tx, workspaceId, userId);
      return (await getWorkspace(tx, workspaceId))!;
    });
  }

  async removeMember(workspaceId: string, userId: string): Promise<void> {
    const { rows } = await this.database.query<{ found: boolean }>(
      `WITH removed AS (DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2)
       SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = $1) AS found`,
      [workspaceId, userId],
    );
    if (!rows[0]!.found) throw workspaceNotFound(workspaceId);
  }

  async removeMemberEverywhere(userId: string): Promise<void> {
    await this.database.query('DELETE FROM workspace_members WHERE user_id = $1', [userId]);
  }

  // Installations

  async listInstallations(workspaceId: string): Promise<StoredInstallation[]> {
    const { rows } = await this.database.query<InstallationRow>(
      `SELECT ${INSTALLATION_COLUMNS} FROM installations WHERE workspace_id = $1 ORDER BY seq`,
      [workspaceId],
    );
    return rows.map(toInstallation);
  }

  async findInstallationByTokenHash(tokenHash: string): Promise<StoredInstallation | undefined> {
    const { rows } = await this.database.query<InstallationRow>(INSTALLATION_BY_TOKEN, [tokenHash]);
    return rows[0] && toInstallation(rows[0]);
  }

  async getInstallation(workspaceId: string, extensionKey: string): Promise<StoredInstallation | undefined> {
    const { rows } = await this.database.query<InstallationRow>(
      `SELECT ${INSTALLATION_COLUMNS} FROM installations WHERE workspace_id = $1 AND extension_key = $2`,
      [workspaceId, extensionKey],
    );
    return rows[0] && toInstallation(rows[0]);
  }

  async install(installation: StoredInstallation, subscriptions: readonly StoredSubscription[] = []): Promise<void> {
    const { workspaceId, extensionKey } = installation;
    try {
      await this.database.transaction(async (tx) => {
        await tx.query(`INSERT INTO installations (${INSTALLATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
          workspaceId,
          extensionKey,
          installation.version,
          installation.enabled,
          installation.installedAt,
          installation.grantedPermissions ?? [],
          installation.tokenHash ?? null,
        ]);
        for (const subscription of subscriptions) await tx.query(INSERT_SUBSCRIPTION, subscriptionValues(subscription));
        await this.feed.notify(tx, TOPIC, workspaceId);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'installations_pkey')) throw alreadyInstalled(workspaceId, extensionKey);
      if (isForeignKeyViolation(error, 'installations_workspace')) throw workspaceNotFound(workspaceId);
      throw error;
    }
  }

  updateInstallation(
    workspaceId: string,
    extensionKey: string,
    change: (current: StoredInstallation, subscriptions: readonly StoredSubscription[]) => InstallationChange | null,
  ): Promise<StoredInstallation> {
    return this.database.transaction(async (tx) => {
      const { rows } = await tx.query<InstallationRow>(
        `SELECT ${INSTALLATION_COLUMNS} FROM installations WHERE workspace_id = $1 AND extension_key = $2 FOR UPDATE`,
        [workspaceId, extensionKey],
      );
      if (!rows[0]) throw installationNotFound(workspaceId, extensionKey);
      const current = toInstallation(rows[0]);
      const own = await tx.query<SubscriptionRow>(
        `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = $1 AND extension_key = $2 ORDER BY seq FOR UPDATE`,
        [workspaceId, extensionKey],
      );
      const next = change(current, own.rows.map(toSubscription));
      if (!next) return current;
      const { installation } = next;
      await tx.query(
        'UPDATE installations SET version = $3, enabled = $4, granted_permissions = $5, token_hash = $6 WHERE workspace_id = $1 AND extension_key = $2',
        [workspaceId, extensionKey, installation.version, installation.enabled, installation.grantedPermissions ?? [], installation.tokenHash ?? null],
      );
      if (next.unsubscribe.length > 0) await tx.query('DELETE FROM subscriptions WHERE id = ANY($1::text[])', [next.unsubscribe]);
      for (const subscription of next.update) await tx.query(UPDATE_SUBSCRIPTION, updatedSubscriptionValues(subscription));
      for (const subscription of next.subscribe) await tx.query(INSERT_SUBSCRIPTION, subscriptionValues(subscription));
      await this.feed.notify(tx, TOPIC, workspaceId);
      return installation;
    });
  }

  async uninstall(workspaceId: string, extensionKey: string): Promise<void> {
    await this.database.transaction(async (tx) => {
      const { rowCount } = await tx.query('DELETE FROM installations WHERE workspace_id = $1 AND extension_key = $2', [workspaceId, extensionKey]);
      if (!rowCount) throw installationNotFound(workspaceId, extensionKey);
      await this.feed.notify(tx, TOPIC, workspaceId);
    });
  }

  // Subscriptions

  async listSubscriptions(workspaceId: string): Promise<StoredSubscription[]> {
    const { rows } = await this.database.query<SubscriptionRow>(
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = $1 ORDER BY seq`,
      [workspaceId],
    );
    return rows.map(toSubscription);
  }

  async getSubscription(workspaceId: string, subscriptionId: string): Promise<StoredSubscription | undefined> {
    const { rows } = await this.database.query<SubscriptionRow>(
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE id = $1 AND workspace_id = $2`,
      [subscriptionId, workspaceId],
    );
    return rows[0] && toSubscription(rows[0]);
  }

  async activeSubscriptions(workspaceId: string, eventKey: string): Promise<StoredSubscription[]> {
    return (await this.active.read([workspaceId, eventKey])) ?? [];
  }


  async subscribe(subscription: StoredSubscription, isDuplicate: (other: StoredSubscription) => boolean): Promise<void> {
    const { workspaceId, eventKey } = subscription;
    try {
      await this.database.transaction(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock($1, hashtext($2 || ' ' || $3))`, [SUBSCRIBE_LOCK, workspaceId, eventKey]);
        // A statement after the lock: it sees every subscription of the pair committed before.
        const { rows } = await tx.query<SubscriptionRow>(
          `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = $1 AND event_key = $2`,
          [workspaceId, eventKey],
        );
        if (rows.map(toSubscription).some(isDuplicate)) throw alreadySubscribed(subscription);
        await tx.query(INSERT_SUBSCRIPTION, subscriptionValues(subscription));
        await this.feed.notify(tx, TOPIC, workspaceId);
      });
    } catch (error) {
      if (isForeignKeyViolation(error, 'subscriptions_workspace')) throw workspaceNotFound(workspaceId);
      throw error;
    }
  }

  updateSubscription(
    workspaceId: string,
    subscriptionId: string,
    change: (current: StoredSubscription) => StoredSubscription | null,
  ): Promise<StoredSubscription> {
    return this.database.transaction(async (tx) => {
      const { rows } = await tx.query<SubscriptionRow>(
        `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE id = $1 AND workspace_id = $2 FOR UPDATE`,
        [subscriptionId, workspaceId],
      );
      if (!rows[0]) throw subscriptionNotFound(workspaceId, subscriptionId);
      const current = toSubscription(rows[0]);
      const next = change(current);
      if (!next) return current;
      await tx.query(UPDATE_SUBSCRIPTION, updatedSubscriptionValues(next));
      await this.feed.notify(tx, TOPIC, workspaceId);
      return next;
    });
  }

  async unsubscribe(workspaceId: string, subscriptionId: string): Promise<void> {
    await this.database.transaction(async (tx) => {
      const { rowCount } = await tx.query('DELETE FROM subscriptions WHERE id = $1 AND workspace_id = $2', [subscriptionId, workspaceId]);
      if (!rowCount) throw subscriptionNotFound(workspaceId, subscriptionId);
      await this.feed.notify(tx, TOPIC, workspaceId);
    });
  }

  async contents(workspaceId: string | null): Promise<WorkspaceContents> {
    const [installations, subscriptions] = await Promise.all([
      this.database.query<InstallationRow>(
        `SELECT ${INSTALLATION_COLUMNS} FROM installations WHERE $1::text IS NULL OR workspace_id = $1 ORDER BY seq`,
        [workspaceId],
      ),
      this.database.query<SubscriptionRow>(
        `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE $1::text IS NULL OR workspace_id = $1 ORDER BY seq`,
        [workspaceId],
      ),
    ]);
    return { installations: installations.rows.map(toInstallation), subscriptions: subscriptions.rows.map(toSubscription) };
  }

  onChange(listener: (workspaceId: string | null) => void): void {
    this.feed.subscribe(TOPIC, listener);
  }

  /** Each write commits before it resolves: nothing is left to flush. */
  async close(): Promise<void> {}
}

async function getWorkspace(db: Queryable, id: string): Promise<Workspace | undefined> {
  const { rows } = await db.query<WorkspaceRow>(`${SELECT_WORKSPACES} WHERE w.id = $1 GROUP BY w.id`, [id]);
  return rows[0] && toWorkspace(rows[0]);
}

/** Once: adding a member twice is nothing to do. */
async function insertMember(tx: Queryable, workspaceId: string, userId: string): Promise<void> {
  try {
    await tx.query('INSERT INTO workspace_members (workspace_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [workspaceId, userId]);
  } catch (error) {
    if (isForeignKeyViolation(error, 'workspace_members_workspace')) throw workspaceNotFound(workspaceId);
    if (isForeignKeyViolation(error, 'workspace_members_user')) throw userNotFound(userId);
    throw error;
  }
}
