import * as v from 'valibot';
import { WEBHOOK_SCHEMES } from '../../handlers/webhooks/index.js';
import { DomainError, notFound } from '../errors.js';
import type { SecretBox } from '../secrets/box.js';
import { Slug } from '../../contract/schemas.js';
import { isEventKeyTemplate } from '../webhooks/event-key.js';
import type { ExtensionConfigStore, FieldType, FieldValue, StoredField } from './store.js';
import { ReadBack } from '../read-back.js';

export { FIELD_TYPES, type FieldType, type FieldValue } from './store.js';

/** What every answer shows instead of a SECRET value. */
const MASKED = '********';

const NO_VALUES: Readonly<Record<string, unknown>> = Object.freeze({});

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
 * Extension configuration: typed fields by name. SECRET values are sealed at
 * rest and never leave this module in clear, except to the extension's own
 * handlers through `values()`.
 *
 * The admin API reads the store. Handlers and the webhook endpoint read
 * memory (every configured extension's fields, and their decrypted values once
 * asked for), which is read back from the store after each change this daemon
 * makes and, through the store's change feed, after each change another
 * daemon makes.
 */
export class ExtensionConfigService {
  /** Every configured extension's fields as last read from the store. */
  private readonly stored = new Map<string, readonly StoredField[]>();
  private readonly decrypted = new Map<string, Readonly<Record<string, unknown>>>();
  /** Read-backs from the store, one at a time, in the order asked for. */
  private reloads: Promise<void> = Promise.resolve();
  /** Every write goes through it, so that memory shows what the store holds. */
  private readonly readBack = new ReadBack<string>((key) => this.reload(key));

  private constructor(
    private readonly store: ExtensionConfigStore,
    private readonly catalog: { has(extensionKey: string): boolean },
    private readonly box: SecretBox,
    private readonly workspaces: { exists(workspaceId: string): Promise<boolean> },
  ) {}

  static async open(
    store: ExtensionConfigStore,
    dependencies: {
      catalog: { has(extensionKey: string): boolean };
      box: SecretBox;
      workspaces: { exists(workspaceId: string): Promise<boolean> };
    },
  ): Promise<ExtensionConfigService> {
    const service = new ExtensionConfigService(store, dependencies.catalog, dependencies.box, dependencies.workspaces);
    await service.reload(null);
    store.onChange((extensionKey) => void service.reload(extensionKey).catch(() => undefined));
    return service;
  }

  async view(extensionKey: string): Promise<{ fields: FieldView[] }> {
    this.assertKnown(extensionKey);
    return { fields: (await this.store.fields(extensionKey)).map(toView) };
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
    const merging = this.store.update(extensionKey, (current) => {
      const fields = [...current];
      for (const update of updates) {
        const index = fields.findIndex((field) => field.name === update.name);
        const existing = fields[index];
        const keepsSecret = update.type === 'SECRET' && (update.value === null || update.value === MASKED);
        const value = keepsSecret
          ? existing?.type === 'SECRET'
            ? existing.value
            : null
          : update.type === 'SECRET'
            ? this.box.seal(update.value as string)
            : update.value;
        const field: StoredField = { name: update.name, type: update.type, value, updatedAt: now };
        if (existing) fields[index] = field;
        else fields.push(field);
      }
      return fields;
    });
    return { fields: (await this.readBack.storing(extensionKey, merging)).map(toView) };
  }

  /** Removes a field, SECRET or not: the way to unset one (a SECRET sent as null keeps its value). */
  async remove(extensionKey: string, name: string): Promise<void> {
    this.assertKnown(extensionKey);
    const removing = this.store.update(extensionKey, (current) => {
      if (!current.some((field) => field.name === name)) throw notFound(`${extensionKey} has no configuration field ${name}`);
      return current.filter((field) => field.name !== name);
    });
    await this.readBack.storing(extensionKey, removing);
  }

  /** The extensions whose inbound webhook calls become events in `workspaceId` (their webhook.workspaceId), as stored. */
  async webhooksInto(workspaceId: string): Promise<string[]> {
    const every = await this.store.loadAll();
    return [...every].filter(([, fields]) => namesWorkspace(fields, workspaceId)).map(([extensionKey]) => extensionKey);
  }

  /**
   * Removes webhook.workspaceId wherever it names `workspaceId` (a deleted
   * workspace): their calls are then refused as not configured, rather than
   * published into whatever workspace is created later under the same id.
   * Resolves with the extensions changed.
   */
  async clearWebhookWorkspace(workspaceId: string): Promise<string[]> {
    const cleared: string[] = [];
    for (const extensionKey of await this.webhooksInto(workspaceId)) {
      let changed = false;
      const clearing = this.store.update(extensionKey, (current) => {
        // Read again under the store's lock: another admin may have pointed it elsewhere meanwhile.
        changed = namesWorkspace(current, workspaceId);
        return changed ? current.filter((field) => field.name !== 'webhook.workspaceId') : null;
      });
      await this.readBack.storing(extensionKey, clearing);
      if (changed) cleared.push(extensionKey);
    }
    return cleared;
  }

  /**
   * The values an extension's handlers see, SECRET values decrypted; cached until the next change.
   * Only configured extensions are cached: anyone can name a key at the webhook endpoint.
   */
  values(extensionKey: string): Readonly<Record<string, unknown>> {
    let values = this.decrypted.get(extensionKey);
    if (!values) {
      const fields = this.stored.get(extensionKey);
      if (!fields) return NO_VALUES;
      const entries = fields
        .filter((field) => field.value !== null)
        .map((field) => [field.name, field.type === 'SECRET' ? this.box.open(field.value as string) : field.value] as const);
      values = Object.freeze(Object.fromEntries(entries));
      this.decrypted.set(extensionKey, values);
    }
    return values;
  }

  /** The names of the fields set (with a value) for an extension. */
  configuredNames(extensionKey: string): string[] {
    return (this.stored.get(extensionKey) ?? []).filter((field) => field.value !== null).map((field) => field.name);
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

  /** Stops read-backs still to be retried: the stores are about to close. */
  close(): void {
    this.readBack.close();
  }

  /**
   * Brings one extension's fields (null: every extension's) in memory up to
   * the store. Read-backs run one after the other, each reading after the
   * previous one finished, so the last one asked for leaves the latest state.
   */
  private reload(extensionKey: string | null): Promise<void> {
    const next = this.reloads.then(async () => {
      const read = extensionKey === null ? await this.store.loadAll() : new Map([[extensionKey, await this.store.fields(extensionKey)]]);
      if (extensionKey === null) {
        this.stored.clear();
        this.decrypted.clear();
      }
      for (const [key, fields] of read) {
        if (fields.length > 0) this.stored.set(key, fields);
        else this.stored.delete(key);
        this.decrypted.delete(key);
      }
    });
    // One failed read (the database away) must not stop the read-backs after it.
    this.reloads = next.catch(() => undefined);
    return next;
  }

  private assertKnown(extensionKey: string): void {
    if (!this.catalog.has(extensionKey)) throw notFound(`extension ${extensionKey} not found`);
  }
}

const namesWorkspace = (fields: readonly StoredField[], workspaceId: string) =>
  fields.some((field) => field.name === 'webhook.workspaceId' && field.value === workspaceId);

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
