export const FIELD_TYPES = ['STRING', 'NUMBER', 'BOOLEAN', 'SECRET'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export type FieldValue = string | number | boolean | null;

export interface StoredField {
  name: string;
  type: FieldType;
  /** For SECRET: sealed with the master key. */
  value: FieldValue;
  updatedAt: string;
}

/**
 * Where extensions' configuration is kept (store/file/extension-config.ts,
 * store/postgres/extension-config.ts): each extension's fields, in the order
 * they were first set. The store never sees a SECRET in clear: the service
 * seals it before it stores it.
 */
export interface ExtensionConfigStore {
  /** Every configured extension's fields, to build what handlers see from at start. */
  loadAll(): Promise<Map<string, StoredField[]>>;
  /** Empty for an extension never configured. */
  fields(extensionKey: string): Promise<StoredField[]>;
  /**
   * Read-modify-write of one extension's fields: `change` gets the current
   * ones, with no other change of them in between (on any daemon), and returns
   * every field to store, or null to store nothing; if it throws, nothing is
   * stored. Resolves with the fields as stored.
   */
  update(extensionKey: string, change: (current: readonly StoredField[]) => StoredField[] | null): Promise<StoredField[]>;
  /**
   * `listener` learns the key of each extension whose configuration another
   * daemon sharing the store changed, or null when changes may have been
   * missed (a lost connection). A store no other daemon writes to never calls it.
   */
  onChange(listener: (extensionKey: string | null) => void): void;
  /** Once every write made so far is durable. */
  close(): Promise<void>;
}
