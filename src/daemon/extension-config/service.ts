import { join } from 'node:path';
import * as v from 'valibot';
import { WEBHOOK_SCHEMES } from '../../handlers/webhooks/index.js';
import { DomainError, notFound } from '../errors.js';
import type { SecretBox } from '../secrets/box.js';
import { Collection } from '../store/collection.js';
import { Slug } from '../validation.js';
import { isEventKeyTemplate } from '../webhooks/event-key.js';

export const FIELD_TYPES = ['STRING', 'NUMBER', 'BOOLEAN', 'SECRET'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export type FieldValue = string | number | boolean | null;

/** What every answer shows instead of a SECRET value. */
const MASKED = '********';

const NO_VALUES: Readonly<Record<string, unknown>> = Object.freeze({});

interface StoredField {
  name: string;
  type: FieldType;
  /** For SECRET: sealed with the master key. */
  value: FieldValue;
  updatedAt: string;
}

interface ConfigDocument {
  schemaVersion: 1;
  extensions: Array<{ extensionKey: string; fields: StoredField[] }>;
}

export interface FieldView {
  name: string;
  type: FieldType;
  value: FieldValue;
  /** Whether a value is stored (a SECRET's value is always masked). */
  set: boolean;
}

export interface FieldUpdate {
  name: string;
  type: FieldType;
  value: FieldValue;
}

export interface WebhookSettings {
  scheme: string;
  secret: string;
  header: string | undefined;
  workspaceId: string | undefined;
  eventKey: string;
}

/** The webhook.* fields the endpoint reads: each has a type and, for some, a format. */
const WEBHOOK_FIELDS: Record<string, { type: FieldType; check?: (value: string) => string | null }> = {
  'webhook.scheme': {
    type: 'STRING',
    check: (value) => ((WEBHOOK_SCHEMES as readonly string[]).includes(value) ? null : `must be one of ${WEBHOOK_SCHEMES.join(', ')}`),
  },
  'webhook.secret': { type: 'SECRET' },
  'webhook.header': { type: 'STRING' },
  'webhook.workspaceId': { type: 'STRING', check: (value) => (v.is(Slug, value) ? null : 'must be a workspace id') },
  'webhook.eventKey': {
    type: 'STRING',
    check: (value) => (isEventKeyTemplate(value) ? null : 'must be an event key such as github.push, where {type} stands for the provider\'s event type'),
  },
};

function invalidField(index: number, message: string): DomainError {
  const path = `fields.${index}.value`;
  return new DomainError('VALIDATION_ERROR', `${path}: ${message}`, { issues: [{ path, message }] });
}

/**
 * Extension configuration (extension-config.json): typed fields by name.
 * SECRET values are sealed at rest and never leave this module in clear,
 * except to the extension's own handlers through `values()`.
 */
export class ExtensionConfigService {
  private readonly decrypted = new Map<string, Readonly<Record<string, unknown>>>();

  private constructor(
    private readonly collection: Collection<ConfigDocument>,
    private readonly catalog: { has(extensionKey: string): boolean },
    private readonly box: SecretBox,
    private readonly workspaces: { exists(workspaceId: string): Promise<boolean> },
  ) {
    collection.onReset(() => this.decrypted.clear());
  }

  static async open(
    dataDir: string,
    dependencies: {
      catalog: { has(extensionKey: string): boolean };
      box: SecretBox;
      workspaces: { exists(workspaceId: string): Promise<boolean> };
    },
  ) {
    const collection = await Collection.open<ConfigDocument>({
      file: join(dataDir, 'extension-config.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, extensions: [] }),
    });
    return new ExtensionConfigService(collection, dependencies.catalog, dependencies.box, dependencies.workspaces);
  }

  view(extensionKey: string): { fields: FieldView[] } {
    this.assertKnown(extensionKey);
    return { fields: this.stored(extensionKey).map(toView) };
  }

  /** Merges: named fields are set, others stay. A SECRET sent as null or masked keeps what is stored. */
  async update(extensionKey: string, updates: readonly FieldUpdate[]): Promise<{ fields: FieldView[] }> {
    this.assertKnown(extensionKey);
    const seen = new Set<string>();
    for (const [index, update] of updates.entries()) {
      if (seen.has(update.name)) throw invalidField(index, `${update.name} is given twice`);
      seen.add(update.name);
      checkField(update, index);
      // Events of a webhook naming a missing workspace could only be refused at every call.
      if (update.name === 'webhook.workspaceId' && typeof update.value === 'string' && !(await this.workspaces.exists(update.value))) {
        throw invalidField(index, `webhook.workspaceId names workspace ${update.value}, which does not exist`);
      }
    }
    const now = new Date().toISOString();
    await this.collection.update((data) => {
      let entry = data.extensions.find((candidate) => candidate.extensionKey === extensionKey);
      if (!entry) {
        entry = { extensionKey, fields: [] };
        data.extensions.push(entry);
      }
      for (const update of updates) {
        const existing = entry.fields.find((field) => field.name === update.name);
        const keepsSecret = update.type === 'SECRET' && (update.value === null || update.value === MASKED);
        const value = keepsSecret
          ? existing?.type === 'SECRET'
            ? existing.value
            : null
          : update.type === 'SECRET'
            ? this.box.seal(update.value as string)
            : update.value;
        const field: StoredField = { name: update.name, type: update.type, value, updatedAt: now };
        if (existing) entry.fields[entry.fields.indexOf(existing)] = field;
        else entry.fields.push(field);
      }
      this.decrypted.delete(extensionKey);
    });
    return this.view(extensionKey);
  }

  /** Removes a field, SECRET or not: the way to unset one (a SECRET sent as null keeps its value). */
  async remove(extensionKey: string, name: string): Promise<void> {
    this.assertKnown(extensionKey);
    const entry = this.collection.data.extensions.find((candidate) => candidate.extensionKey === extensionKey);
    const field = entry?.fields.find((candidate) => candidate.name === name);
    if (!entry || !field) throw notFound(`${extensionKey} has no configuration field ${name}`);
    await this.collection.update(() => {
      entry.fields = entry.fields.filter((candidate) => candidate !== field);
      this.decrypted.delete(extensionKey);
    });
  }

  /**
   * The values an extension's handlers see, SECRET values decrypted; cached until the next change.
   * Only configured extensions are cached: anyone can name a key at the webhook endpoint.
   */
  values(extensionKey: string): Readonly<Record<string, unknown>> {
    let values = this.decrypted.get(extensionKey);
    if (!values) {
      const entry = this.collection.data.extensions.find((candidate) => candidate.extensionKey === extensionKey);
      if (!entry) return NO_VALUES;
      const entries = entry.fields
        .filter((field) => field.value !== null)
        .map((field) => [field.name, field.type === 'SECRET' ? this.box.open(field.value as string) : field.value] as const);
      values = Object.freeze(Object.fromEntries(entries));
      this.decrypted.set(extensionKey, values);
    }
    return values;
  }

  /** How many extensions have decrypted values in memory: observable so that tests can hold it bounded. */
  get cachedExtensions(): number {
    return this.decrypted.size;
  }

  /** The declarative webhook of an extension, or null when it has no webhook.scheme. */
  webhookSettings(extensionKey: string): WebhookSettings | null {
    const values = this.values(extensionKey);
    const scheme = values['webhook.scheme'];
    if (typeof scheme !== 'string') return null;
    const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
    return {
      scheme,
      secret: text('webhook.secret') ?? '',
      header: text('webhook.header'),
      workspaceId: text('webhook.workspaceId'),
      eventKey: text('webhook.eventKey') ?? `${extensionKey}.webhook.received`,
    };
  }

  flush(): Promise<void> {
    return this.collection.flush();
  }

  private stored(extensionKey: string): StoredField[] {
    return this.collection.data.extensions.find((entry) => entry.extensionKey === extensionKey)?.fields ?? [];
  }

  private assertKnown(extensionKey: string): void {
    if (!this.catalog.has(extensionKey)) throw notFound(`extension ${extensionKey} not found`);
  }
}

function toView(field: StoredField): FieldView {
  const set = field.value !== null;
  return { name: field.name, type: field.type, value: field.type === 'SECRET' ? (set ? MASKED : null) : field.value, set };
}

/** The value must have the field's type; webhook.* fields have fixed types and formats. */
function checkField(update: FieldUpdate, index: number): void {
  const { type, value } = update;
  const known = WEBHOOK_FIELDS[update.name];
  if (known && known.type !== type) throw invalidField(index, `${update.name} must be of type ${known.type}`);
  if (value === null) return;
  const matches =
    type === 'NUMBER' ? typeof value === 'number' && Number.isFinite(value) : type === 'BOOLEAN' ? typeof value === 'boolean' : typeof value === 'string';
  if (!matches) throw invalidField(index, `a ${type} field needs a ${type === 'SECRET' ? 'string' : type.toLowerCase()} value`);
  if (type === 'SECRET' && value === '') throw invalidField(index, 'a SECRET must not be empty; send null to keep the stored one');
  if (known?.check && typeof value === 'string' && value !== MASKED) {
    const problem = known.check(value);
    if (problem) throw invalidField(index, problem);
  }
}
