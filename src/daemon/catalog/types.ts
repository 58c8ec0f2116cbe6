/**
 * The catalog's records (as stored) and resources (as answered). Stored records
 * carry what the resources leave out: who created an extension, and when each
 * version was published.
 */

import type { VersionRecord } from '../../contract/types.js';

// The resources answered as they are: one definition, shared with the CLI and the console.
export type { AuditAction, AuditRecord, CategoryCount, ExtensionSummary, VersionRecord } from '../../contract/types.js';

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
  compatibleVersion?: string | null;
}

/** The user a catalog change is attributed to. */
export interface Actor {
  id: string;
  email: string;
  fullName: string;
}

export interface FieldChange {
  from: unknown;
  to: unknown;
}

