import { conflict } from '../errors.js';
import type { AuditAction, AuditRecord, StoredExtension } from './types.js';

export interface AuditFilter {
  extensionKey?: string;
  version?: string;
  action?: AuditAction;
  limit: number;
  offset?: number;
}

/** A change of one extension, as `CatalogStore.update` stores it: the extension after, and its audit record. */
export interface CatalogChange {
  next: StoredExtension;
  record: AuditRecord;
}

export const extensionExists = (extensionKey: string) => conflict(`extension ${extensionKey} already exists`);

/**
 * Where the catalog and its audit trail are kept (store/file/catalog.ts,
 * store/postgres/catalog.ts). Each change stores the extension and its audit
 * record together. Extensions are never removed. Versions are newest first by
 * semver precedence, as the catalog orders them.
 */
export interface CatalogStore {
  /** Every extension, to build the catalog's read side from at start. */
  loadAll(): Promise<StoredExtension[]>;
  get(extensionKey: string): Promise<StoredExtension | undefined>;
  /** Throws CONFLICT when an extension has the key already, however many daemons create it at once. */
  create(extension: StoredExtension, record: AuditRecord): Promise<void>;
  /**
   * Read-modify-write of one extension: `change` gets the current extension,
   * with no other change of it in between (on any daemon), and returns the
   * change to store, or null to store nothing; if it throws, nothing is stored.
   * Resolves with the extension as stored. Throws NOT_FOUND.
   */
  update(extensionKey: string, change: (current: StoredExtension) => CatalogChange | null): Promise<StoredExtension>;
  /** Newest first. */
  auditTrail(filter: AuditFilter): Promise<AuditRecord[]>;
  /**
   * `listener` learns the key of each extension another daemon sharing the
   * store changed, or null when changes may have been missed (a lost
   * connection). A store no other daemon writes to never calls it.
   */
  onChange(listener: (extensionKey: string | null) => void): void;
  /** Once every write made so far is durable. */
  close(): Promise<void>;
}
