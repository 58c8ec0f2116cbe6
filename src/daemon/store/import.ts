import { describeFault, DomainError, StartupError } from '../errors.js';
import { FileCatalogStore } from './file/catalog.js';
import { FileExtensionConfigStore } from './file/extension-config.js';
import { readChatChannels, readRevocations, readWebhookRequests } from './file/log-contents.js';
import { FileRevocationStore } from './file/revocations.js';
import { FileApiTokenStore } from './file/api-tokens.js';
import { FileUserStore } from './file/users.js';
import { FileWorkspaceStore } from './file/workspaces.js';
import { copyDeliveries, copyEventLog } from './import-events.js';
import { assertPlatformDataDir, lockDataDir } from './lock.js';
import { openMigratedDatabase } from './postgres/connect.js';
import { quoteIdentifier, type Queryable } from './postgres/database.js';
import { insertExtension } from './postgres/catalog.js';
import { insertAuditRecords, insertUsers, insertWebhookRequests } from './postgres/import-rows.js';
import { inOneTransaction } from './postgres/in-transaction.js';
import { redactUrl, type DatabaseSettings } from '../database-settings.js';
import type { Copied, CopyStep, ImportTarget } from './import-step.js';

/**
 * Every step, in the order of what refers to what: members refer to users,
 * deliveries to their events.
 * Login throttling and the webhook replay check are kept in memory on files:
 * there is nothing to copy. Idempotency keys are on disk, but as fingerprints of
 * workspace and key that the database's rows cannot be made from: not copied
 * (docs/scaling.md). A domain that moves to PostgreSQL adds its step here.
 */
export const COPY_STEPS: readonly CopyStep[] = [
  { name: 'users', copy: copyUsers },
  { name: 'revoked sessions', copy: copyRevocations },
  { name: 'API tokens', copy: copyApiTokens },
  { name: 'the catalog', copy: copyCatalog },
  { name: 'workspaces', copy: copyWorkspaces },
  { name: 'extension configuration', copy: copyExtensionConfig },
  { name: 'chat', copy: copyChat },
  { name: 'the webhook request log', copy: copyWebhookRequests },
  { name: 'the event log', copy: copyEventLog },
  { name: 'deliveries and dead letters', copy: copyDeliveries },
];

/** First key of the advisory lock an import takes (the second is the schema's hash): two imports at once cannot both find the schema empty. */
const IMPORT_LOCK = 0x696d7074; // "impt"

/**
 * Copies a file-backed data directory into the database's schema, migrated
 * first: every step in one transaction, so a failure anywhere writes nothing.
 * Refuses a schema where any platform table holds a row. The data directory
 * is locked meanwhile (no daemon may be running on it) and only read, apart
 * from what opening its stores repairs as a daemon start would (a torn last
 * line of a log is cut, an earlier version's file is brought up to date).
 */
export async function importDataDir(dataDir: string, settings: DatabaseSettings): Promise<Copied[]> {
  assertPlatformDataDir(dataDir);
  const lock = lockDataDir(dataDir);
  try {
    const { database } = await openMigratedDatabase(settings, () => undefined);
    try {
      return await inOneTransaction(database, async (stores, tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [IMPORT_LOCK, settings.schema]);
        await assertEmpty(tx, settings);
        const copied: Copied[] = [];
        for (const step of COPY_STEPS) copied.push(...(await runStep(step, dataDir, { stores, tx })));
        return copied;
      });
    } catch (error) {
      throw importFailed(error, `the import into ${redactUrl(settings.url)}`);
    } finally {
      await database.close();
    }
  } finally {
    lock.release();
  }
}

async function runStep(step: CopyStep, dataDir: string, target: ImportTarget): Promise<Copied[]> {
  try {
    return await step.copy(dataDir, target);
  } catch (error) {
    // A data file the daemon could not start with either: its error names the file.
    if (error instanceof StartupError) throw new StartupError(`${error.message.replace(/; the daemon will not start.*$/, '')}; nothing was imported`);
    throw importFailed(error, `copying ${step.name}`);
  }
}

/** One line for the operator; a lost connection named by its cause rather than as 503. */
function importFailed(error: unknown, what: string): StartupError {
  if (error instanceof StartupError) return error;
  const cause = error instanceof DomainError && error.cause instanceof Error ? error.cause : error;
  return new StartupError(`${what} failed: ${describeFault(cause)}; nothing was imported`);
}

/** Any row in any table of the schema but the migrations' own refuses the import. */
async function assertEmpty(tx: Queryable, settings: DatabaseSettings): Promise<void> {
  const { rows: tables } = await tx.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = $1 AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY table_name`,
    [settings.schema],
  );
  if (tables.length === 0) return;
  const probes = tables.map((table, index) => `SELECT $${index + 1}::text AS name WHERE EXISTS (SELECT 1 FROM ${quoteIdentifier(table.name)})`);
  const { rows: holding } = await tx.query<{ name: string }>(
    probes.join(' UNION ALL '),
    tables.map((table) => table.name),
  );
  if (holding.length === 0) return;
  throw new StartupError(
    `schema ${settings.schema} of ${redactUrl(settings.url)} already holds data (rows in ${holding.map((row) => row.name).join(', ')}); ` +
      'db import copies into an empty schema only; nothing was written',
  );
}

/** Reads through a file store opened for it, and closes it. */
async function reading<S extends { close(): Promise<void> }, T>(opening: Promise<S>, read: (store: S) => Promise<T>): Promise<T> {
  const store = await opening;
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

/** Written row by row: the store's `insert` would give each user a new id. */
async function copyUsers(dataDir: string, { tx }: ImportTarget): Promise<Copied[]> {
  const users = await reading(FileUserStore.open(dataDir), (store) => store.list());
  await insertUsers(tx, users);
  return [{ kind: 'users', count: users.length }];
}

/** Tokens logged out and not yet expired: with the same jwt-secret they would otherwise work again. */
async function copyRevocations(dataDir: string, { stores }: ImportTarget): Promise<Copied[]> {
  await reading(FileRevocationStore.open(dataDir), async () => undefined);
  const revoked = await readRevocations(dataDir, Math.floor(Date.now() / 1000));
  for (const [jti, expiresAt] of revoked) await stores.revocations.revoke(jti, expiresAt);
  return [{ kind: 'revoked sessions', count: revoked.size }];
}

/** Each token as it is (its hash, its last use): scripts keep working after the move. */
async function copyApiTokens(dataDir: string, { stores }: ImportTarget): Promise<Copied[]> {
  const tokens = await reading(FileApiTokenStore.open(dataDir), (store) => store.listAll());
  for (const token of tokens) await stores.apiTokens.insert(token, Number.MAX_SAFE_INTEGER);
  const used = tokens.filter((token) => token.lastUsedAt !== null);
  if (used.length > 0) await stores.apiTokens.recordUses(new Map(used.map((token) => [token.id, token.lastUsedAt!])));
  return [{ kind: 'API tokens', count: tokens.length }];
}

/** Written row by row: the store's `create` writes one audit record of its own per extension. */
async function copyCatalog(dataDir: string, { tx }: ImportTarget): Promise<Copied[]> {
  const { extensions, trail } = await reading(FileCatalogStore.open(dataDir), async (store) => ({
    extensions: await store.loadAll(),
    // The whole trail, newest first.
    trail: await store.auditTrail({ limit: Number.MAX_SAFE_INTEGER }),
  }));
  for (const extension of extensions) await insertExtension(tx, extension);
  await insertAuditRecords(tx, trail.reverse());
  return [
    { kind: 'extensions', count: extensions.length },
    { kind: 'versions', count: extensions.reduce((sum, extension) => sum + extension.versions.length, 0) },
    { kind: 'audit records', count: trail.length },
  ];
}

/**
 * Through the store. A member whose user is gone (a daemon stopped between
 * deleting the user and taking it out of its workspaces) is left out, as
 * PostgreSQL would have removed it with the user.
 */
async function copyWorkspaces(dataDir: string, { stores }: ImportTarget): Promise<Copied[]> {
  const { workspaces, contents } = await reading(FileWorkspaceStore.open(dataDir), async (store) => ({
    workspaces: await store.listWorkspaces(),
    contents: await store.contents(null),
  }));
  let members = 0;
  let leftOut = 0;
  for (const workspace of workspaces) {
    const kept: string[] = [];
    for (const userId of workspace.members) {
      if (await stores.users.get(userId)) kept.push(userId);
      else leftOut += 1;
    }
    await stores.workspaces.createWorkspace({ ...workspace, members: kept });
    members += kept.length;
  }
  for (const installation of contents.installations) await stores.workspaces.install(installation);
  // Duplicates were refused when they were made.
  for (const subscription of contents.subscriptions) await stores.workspaces.subscribe(subscription, () => false);
  return [
    { kind: 'workspaces', count: workspaces.length },
    { kind: 'members', count: members },
    ...(leftOut > 0 ? [{ kind: 'members of deleted users (left out)', count: leftOut }] : []),
    { kind: 'installations', count: contents.installations.length },
    { kind: 'subscriptions', count: contents.subscriptions.length },
  ];
}

/** Through the store; SECRET values stay sealed as they are. */
async function copyExtensionConfig(dataDir: string, { stores }: ImportTarget): Promise<Copied[]> {
  const configured = await reading(FileExtensionConfigStore.open(dataDir), (store) => store.loadAll());
  let extensions = 0;
  let fields = 0;
  for (const [extensionKey, stored] of configured) {
    if (stored.length === 0) continue;
    await stores.extensionConfig.update(extensionKey, () => [...stored]);
    extensions += 1;
    fields += stored.length;
  }
  return [
    { kind: 'configured extensions', count: extensions },
    { kind: 'configuration fields', count: fields },
  ];
}

/** Through the store, oldest first: it numbers each channel's messages in that order. */
async function copyChat(dataDir: string, { stores }: ImportTarget): Promise<Copied[]> {
  const channels = await readChatChannels(dataDir);
  let copied = 0;
  let messages = 0;
  // A workspace may hold more channels than PLATFORM_CHAT_CHANNELS allows (opened before the limit, or before it was lowered): the rest is not copied, and said so.
  let refused = 0;
  for (const channel of channels) {
    const [first, ...rest] = channel.messages;
    if (first === undefined) continue;
    if (!(await stores.chat.post(channel.workspaceId, first))) {
      refused += 1;
      continue;
    }
    for (const message of rest) await stores.chat.post(channel.workspaceId, message);
    copied += 1;
    messages += channel.messages.length;
  }
  return [
    { kind: 'chat channels', count: copied },
    { kind: 'chat messages', count: messages },
    ...(refused > 0 ? [{ kind: 'chat channels beyond the limit of channels per workspace, not copied', count: refused }] : []),
  ];
}

/** Written row by row: the store's `record` would number the calls anew, and cursors hold their numbers. */
async function copyWebhookRequests(dataDir: string, { tx }: ImportTarget): Promise<Copied[]> {
  const logs = await readWebhookRequests(dataDir);
  let calls = 0;
  for (const [extensionKey, kept] of logs) {
    await insertWebhookRequests(tx, extensionKey, kept);
    calls += kept.length;
  }
  return [{ kind: 'webhook requests', count: calls }];
}
