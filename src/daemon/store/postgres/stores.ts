import { DEFAULT_CHAT_LIMITS } from '../../chat/store.js';
import type { Stores, StoreOptions } from '../stores.js';
import { PostgresActivityLog } from './activity.js';
import { PostgresCatalogStore } from './catalog.js';
import { ChangeFeed } from './change-feed.js';
import { PostgresChatStore } from './chat.js';
import { openMigratedDatabase } from './connect.js';
import type { Database } from './database.js';
import { PostgresDeadLetterStore } from './dead-letters.js';
import { PostgresDeliveryStore } from './deliveries.js';
import { PostgresEventStore } from './events.js';
import { PostgresExtensionConfigStore } from './extension-config.js';
import { PostgresIdempotencyKeyStore } from './idempotency-keys.js';
import { PostgresJobLock } from './job-lock.js';
import { LeaseKeeper } from './lease-keeper.js';
import { PostgresLoginAttemptStore } from './login-attempts.js';
import { PostgresRevocationStore } from './revocations.js';
import { PostgresApiTokenStore } from './api-tokens.js';
import { PostgresUserStore } from './users.js';
import { PostgresWebhookReplayStore } from './webhook-replays.js';
import { PostgresWebhookRequestStore } from './webhook-requests.js';
import { PostgresWorkspaceStore } from './workspaces.js';
import { redactUrl, type DatabaseSettings } from '../../database-settings.js';
import { StartupError } from '../../errors.js';

/** The stores of a migrated PostgreSQL schema; closing them leaves the database and its feed open. */
export function postgresStores(database: Database, feed: ChangeFeed, options: StoreOptions = {}): Stores {
  const logError = options.logError ?? console.error;
  // One lease keeper per daemon: what a publish, a claim or a replay leases, it renews until the holder lets go.
  const leases = new LeaseKeeper(database, { leaseMs: options.deliveryLeaseMs ?? 30_000, logError });
  const deadLetters = new PostgresDeadLetterStore(database, leases);
  const deliveries = new PostgresDeliveryStore(database, feed, leases, { logError, deadLettersChanged: () => deadLetters.changed() });
  const events = new PostgresEventStore(database, feed, leases, { holdAtMost: options.holdDeliveriesAtMost ?? 256, logError });
  const activity = new PostgresActivityLog(database, feed, logError);
  const idempotencyKeys = new PostgresIdempotencyKeyStore(database, { leaseMs: options.deliveryLeaseMs ?? 30_000, logError });
  return {
    users: new PostgresUserStore(database, feed),
    revocations: new PostgresRevocationStore(database),
    apiTokens: new PostgresApiTokenStore(database),
    loginAttempts: new PostgresLoginAttemptStore(database, options.now),
    catalog: new PostgresCatalogStore(database, feed),
    chat: new PostgresChatStore(database, options.chat ?? DEFAULT_CHAT_LIMITS),
    webhookRequests: new PostgresWebhookRequestStore(database, logError),
    webhookReplays: new PostgresWebhookReplayStore(database, options.now),
    workspaces: new PostgresWorkspaceStore(database, feed),
    extensionConfig: new PostgresExtensionConfigStore(database, feed),
    events,
    deliveries,
    deadLetters,
    idempotencyKeys,
    jobLock: new PostgresJobLock(database),
    activity,
    async close() {
      leases.close();
      idempotencyKeys.close();
      await events.close();
      await deliveries.close();
      await activity.close();
    },
  };
}

/** A daemon's stores on PostgreSQL, with what the daemon does with the database itself. */
export interface DatabaseStores {
  stores: Stores;
  /** Why the database cannot serve now (null: it answered a query), for readiness. */
  fault(): Promise<string | null>;
  /** Closes the stores, the change feed and the pool. */
  close(): Promise<void>;
}

/**
 * Connects, migrates (under an advisory lock: of daemons starting together one
 * migrates, the others wait and find it done) and connects the change feed
 * before the domains load what they keep in memory: each then LISTENs as soon
 * as it subscribes, right after its load (see docs/decisions.md, Several daemons).
 */
export async function openDatabaseStores(
  settings: DatabaseSettings,
  options: StoreOptions & { logWarning: (message: string) => void },
): Promise<DatabaseStores> {
  const { database } = await openMigratedDatabase(settings, (error) =>
    options.logWarning(`an idle database connection failed (it is replaced when next needed): ${error.message}`),
  );
  const feed = new ChangeFeed(database, (error) =>
    options.logWarning(`the database change feed lost its connection (reconnecting every second): ${error.message}`),
  );
  try {
    await feed.start();
  } catch (error) {
    await database.close().catch(() => undefined);
    throw new StartupError(`database ${redactUrl(settings.url)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const stores = postgresStores(database, feed, options);
  return {
    stores,
    async fault() {
      try {
        await database.query('SELECT 1');
        return null;
      } catch (error) {
        const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
        return `the database cannot be reached (${cause instanceof Error ? cause.message : String(cause)})`;
      }
    },
    async close() {
      await stores.close();
      await feed.close();
      await database.close();
    },
  };
}
