import { extensionExists, type AuditFilter, type CatalogChange, type CatalogStore } from '../../catalog/store.js';
import type { AuditAction, AuditRecord, StoredExtension, StoredVersion } from '../../catalog/types.js';
import { newestFirst } from '../../catalog/versions.js';
import type { Manifest } from '../../../contract/manifest.js';
import { notFound } from '../../errors.js';
import type { ChangeFeed } from './change-feed.js';
import { isUniqueViolation, type Database, type Queryable } from './database.js';

const TOPIC = 'catalog';

interface ExtensionRow {
  extension_key: string;
  name: string;
  description: string;
  category: string;
  permissions: string[];
  created_by: string;
  author_name: string;
  created_at: Date;
  updated_at: Date;
  /** json_agg of the version rows: timestamps arrive as text. */
  versions: VersionRow[];
}

interface VersionRow {
  version: string;
  release_date: string;
  yanked: boolean;
  artifact_url: string;
  manifest_url: string | null;
  requires_platform: string | null;
  requires_sdk: string | null;
  changelog: string | null;
  published_at: string;
  manifest: Manifest | null;
}

interface AuditRow {
  id: string;
  at: Date;
  actor_id: string;
  actor_email: string;
  action: AuditAction;
  extension_key: string;
  version: string | null;
  reason: string | null;
  changes: AuditRecord['changes'] | null;
}

/** Every extension with its versions, in one query. */
const SELECT_EXTENSIONS = `
  SELECT e.extension_key, e.name, e.description, e.category, e.permissions, e.created_by, e.author_name, e.created_at, e.updated_at,
         coalesce(json_agg(v ORDER BY v.version) FILTER (WHERE v.version IS NOT NULL), '[]') AS versions
  FROM extensions e LEFT JOIN extension_versions v USING (extension_key)`;

const toVersion = (row: VersionRow): StoredVersion => ({
  version: row.version,
  releaseDate: row.release_date,
  yanked: row.yanked,
  artifactUrl: row.artifact_url,
  manifestUrl: row.manifest_url,
  requiresPlatform: row.requires_platform,
  requiresSdk: row.requires_sdk,
  changelog: row.changelog,
  publishedAt: new Date(row.published_at).toISOString(),
  manifest: row.manifest,
});

const toExtension = (row: ExtensionRow): StoredExtension => ({
  extensionKey: row.extension_key,
  name: row.name,
  description: row.description,
  category: row.category,
  permissions: row.permissions,
  createdBy: row.created_by,
  authorName: row.author_name,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  // SQL cannot order by semver precedence; the catalog's own comparison does.
  versions: row.versions.map(toVersion).sort((a, b) => newestFirst(a.version, b.version)),
});

const toAuditRecord = (row: AuditRow): AuditRecord => ({
  id: row.id,
  at: row.at.toISOString(),
  actor: { id: row.actor_id, email: row.actor_email },
  action: row.action,
  extensionKey: row.extension_key,
  ...(row.version === null ? {} : { version: row.version }),
  ...(row.reason === null ? {} : { reason: row.reason }),
  ...(row.changes === null ? {} : { changes: row.changes }),
});

/** Precedence ignores build metadata; a canonical version without it is its own precedence. */
const precedenceOf = (version: string) => version.split('+', 1)[0]!;

/**
 * The `extensions`, `extension_versions` and `catalog_audit` tables. A change
 * locks its extension's row for the length of its transaction, so `update`'s
 * check and write are one step across daemons; the primary key refuses a
 * duplicate extension and a unique (extension, precedence) a duplicate
 * version. The audit record is written in the same transaction, so the trail
 * holds exactly the changes that were stored. Other daemons hear of each
 * change by NOTIFY, sent at commit.
 */
export class PostgresCatalogStore implements CatalogStore {
  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
  ) {}

  async loadAll(): Promise<StoredExtension[]> {
    const { rows } = await this.database.query<ExtensionRow>(`${SELECT_EXTENSIONS} GROUP BY e.extension_key ORDER BY e.extension_key`);
    return rows.map(toExtension);
  }

  async get(extensionKey: string): Promise<StoredExtension | undefined> {
    const { rows } = await this.database.query<ExtensionRow>(`${SELECT_EXTENSIONS} WHERE e.extension_key = $1 GROUP BY e.extension_key`, [
      extensionKey,
    ]);
    return rows[0] && toExtension(rows[0]);
  }

  async create(extension: StoredExtension, record: AuditRecord): Promise<void> {
    try {
      await this.database.transaction(async (tx) => {
        await insertExtension(tx, extension);
        await insertAudit(tx, record);
        await this.feed.notify(tx, TOPIC, extension.extensionKey);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'extensions_pkey')) throw extensionExists(extension.extensionKey);
      throw error;
    }
  }

  update(extensionKey: string, change: (current: StoredExtension) => CatalogChange | null): Promise<StoredExtension> {
    return this.database.transaction(async (tx) => {
      const locked = await tx.query('SELECT 1 FROM extensions WHERE extension_key = $1 FOR UPDATE', [extensionKey]);
      if (!locked.rowCount) throw notFound(`extension ${extensionKey} not found`);
      const { rows } = await tx.query<ExtensionRow>(`${SELECT_EXTENSIONS} WHERE e.extension_key = $1 GROUP BY e.extension_key`, [extensionKey]);
      const current = toExtension(rows[0]!);
      const outcome = change(current);
      if (!outcome) return current;
      const { next, record } = outcome;
      await tx.query(
        `UPDATE extensions SET name = $2, description = $3, category = $4, permissions = $5, updated_at = $6 WHERE extension_key = $1`,
        [extensionKey, next.name, next.description, next.category, next.permissions, next.updatedAt],
      );
      const before = new Map(current.versions.map((version) => [version.version, version]));
      for (const version of next.versions) {
        const known = before.get(version.version);
        if (!known) await insertVersion(tx, extensionKey, version);
        else if (known.yanked !== version.yanked) {
          await tx.query('UPDATE extension_versions SET yanked = $3 WHERE extension_key = $1 AND version = $2', [extensionKey, version.version, version.yanked]);
        }
      }
      await insertAudit(tx, record);
      await this.feed.notify(tx, TOPIC, extensionKey);
      return next;
    });
  }

  async auditTrail(filter: AuditFilter): Promise<AuditRecord[]> {
    const { rows } = await this.database.query<AuditRow>(
      `SELECT id, at, actor_id, actor_email, action, extension_key, version, reason, changes FROM catalog_audit
       WHERE ($1::text IS NULL OR extension_key = $1) AND ($4::text IS NULL OR version = $4) AND ($5::text IS NULL OR action = $5)
       ORDER BY seq DESC LIMIT $2 OFFSET $3`,
      [filter.extensionKey ?? null, filter.limit, filter.offset ?? 0, filter.version ?? null, filter.action ?? null],
    );
    return rows.map(toAuditRecord);
  }

  onChange(listener: (extensionKey: string | null) => void): void {
    this.feed.subscribe(TOPIC, listener);
  }

  /** Each write commits before it resolves: nothing is left to flush. */
  async close(): Promise<void> {}
}

/** The extension and every version of it (also what `db import` writes). */
export async function insertExtension(tx: Queryable, extension: StoredExtension): Promise<void> {
  await tx.query(
    `INSERT INTO extensions (extension_key, name, description, category, permissions, created_by, author_name, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      extension.extensionKey,
      extension.name,
      extension.description,
      extension.category,
      extension.permissions,
      extension.createdBy,
      extension.authorName,
      extension.createdAt,
      extension.updatedAt,
    ],
  );
  const versions = extension.versions;
  if (versions.length === 0) return;
  await tx.query(
    `INSERT INTO extension_versions (extension_key, version, precedence, release_date, yanked, artifact_url, manifest_url,
                                     requires_platform, requires_sdk, changelog, published_at, manifest)
     SELECT $1, v.* FROM unnest($2::text[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[],
                                $10::text[], $11::timestamptz[], $12::json[]) AS v`,
    [
      extension.extensionKey,
      versions.map((version) => version.version),
      versions.map((version) => precedenceOf(version.version)),
      versions.map((version) => version.releaseDate),
      versions.map((version) => version.yanked),
      versions.map((version) => version.artifactUrl),
      versions.map((version) => version.manifestUrl),
      versions.map((version) => version.requiresPlatform),
      versions.map((version) => version.requiresSdk),
      versions.map((version) => version.changelog),
      versions.map((version) => version.publishedAt),
      versions.map((version) => manifestJson(version)),
    ],
  );
}

async function insertVersion(tx: Queryable, extensionKey: string, version: StoredVersion): Promise<void> {
  await tx.query(
    `INSERT INTO extension_versions (extension_key, version, precedence, release_date, yanked, artifact_url, manifest_url,
                                     requires_platform, requires_sdk, changelog, published_at, manifest)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      extensionKey,
      version.version,
      precedenceOf(version.version),
      version.releaseDate,
      version.yanked,
      version.artifactUrl,
      version.manifestUrl,
      version.requiresPlatform,
      version.requiresSdk,
      version.changelog,
      version.publishedAt,
      manifestJson(version),
    ],
  );
}

const manifestJson = (version: StoredVersion): string | null => (version.manifest ? JSON.stringify(version.manifest) : null);

async function insertAudit(tx: Queryable, record: AuditRecord): Promise<void> {
  await tx.query(
    `INSERT INTO catalog_audit (id, at, actor_id, actor_email, action, extension_key, version, reason, changes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      record.id,
      record.at,
      record.actor.id,
      record.actor.email,
      record.action,
      record.extensionKey,
      record.version ?? null,
      record.reason ?? null,
      record.changes === undefined ? null : JSON.stringify(record.changes),
    ],
  );
}
