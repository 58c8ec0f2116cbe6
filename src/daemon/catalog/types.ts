/**
 * The catalog's records (as stored) and resources (as answered). Stored records
 * carry what the resources leave out: who created an extension, and when each
 * version was published.
 */

/** One published version, exactly as `GET …/versions/{version}` answers it. Absent optionals are null. */
export interface VersionRecord {
  version: string;
  /** UTC calendar date of publication, YYYY-MM-DD. */
  releaseDate: string;
  yanked: boolean;
  artifactUrl: string;
  manifestUrl: string | null;
  requiresPlatform: string | null;
  requiresSdk: string | null;
  changelog: string | null;
}

export interface StoredVersion extends VersionRecord {
  /** ISO 8601 instant of publication; releaseDate is its date part. */
  publishedAt: string;
}

export interface StoredExtension {
  extensionKey: string;
  name: string;
  description: string;
  category: string;
  permissions: string[];
  /** User id of the creator. */
  createdBy: string;
  /** The creator's fullName at creation: the author shown once that user is deleted. */
  authorName: string;
  createdAt: string;
  updatedAt: string;
  /** Newest first by semver precedence. */
  versions: StoredVersion[];
}

/** One file per extension: `<data-dir>/catalog/<extensionKey>.json`. */
export interface ExtensionDocument {
  schemaVersion: 1;
  extension: StoredExtension;
}

/** An item of the marketplace list: exactly these six fields. */
export interface ExtensionSummary {
  extensionKey: string;
  name: string;
  description: string;
  category: string;
  latestVersion: string | null;
  author: string;
}

/** A version as listed in the detail. */
export interface VersionEntry {
  version: string;
  releaseDate: string;
  yanked: boolean;
}

/** The marketplace detail: exactly these seven fields. */
export interface ExtensionDetail {
  extensionKey: string;
  name: string;
  description: string;
  category: string;
  latestVersion: string | null;
  versions: readonly VersionEntry[];
  permissions: readonly string[];
}

export interface CategoryCount {
  category: string;
  count: number;
}

/** The user a catalog change is attributed to. */
export interface Actor {
  id: string;
  email: string;
  fullName: string;
}

export type AuditAction = 'create' | 'update' | 'publish' | 'yank' | 'unyank';

export interface FieldChange {
  from: unknown;
  to: unknown;
}

/** One line of `<data-dir>/audit.log`. */
export interface AuditRecord {
  id: string;
  at: string;
  actor: { id: string; email: string };
  action: AuditAction;
  extensionKey: string;
  version?: string;
  reason?: string;
  /** create and update: each field set or changed, with its value before and after. */
  changes?: Record<string, FieldChange>;
}
