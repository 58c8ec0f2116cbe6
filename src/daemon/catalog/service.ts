import { randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../errors.js';
import { checkPermissions } from './permissions.js';
import {
  DEFAULT_CATEGORY,
  type BrowseInput,
  type CreateExtensionInput,
  type PublishVersionInput,
  type UpdateExtensionInput,
} from './schemas.js';
import { ReadBack } from '../read-back.js';
import { SearchIndex } from './search-index.js';
import { extensionExists, type AuditFilter, type CatalogStore } from './store.js';
import type {
  Actor,
  AuditAction,
  AuditRecord,
  CategoryCount,
  ExtensionDetail,
  ExtensionSummary,
  FieldChange,
  StoredExtension,
  StoredVersion,
  VersionRecord,
} from './types.js';
import { compatibleVersionOf, latestVersionOf, newestFirst, samePrecedence, type Runtime } from './versions.js';
import { EventTypeCatalog, type BuiltInEventType } from './event-types.js';
import { parseManifest } from './manifest.js';

/** One extension in memory, as last read from the store, and what is derived from it, rebuilt whenever it changes. */
interface Entry {
  /** A small integer naming the extension in the search index and the ordering. */
  readonly slot: number;
  extension: StoredExtension;
  /** name, description and category as last indexed: a change of these reorders or refilters listings. */
  listedAs: string;
  /** Built on first read after a change; frozen because they are shared between requests. */
  summary: ExtensionSummary | null;
  detail: ExtensionDetail | null;
}

export interface CatalogOptions {
  /** The current fullName of a user; undefined once the user is deleted. */
  fullNameOf: (userId: string) => string | undefined;
  /** The event types the daemon defines itself (none unless given). */
  builtInEventTypes?: readonly BuiltInEventType[];
}

export interface BrowsePage {
  items: ExtensionSummary[];
  total: number;
}

/**
 * Listings of recent (search, category) pairs are remembered until the next change
 * of a name, description or category: up to this many listings, holding at most
 * CACHED_SLOTS slots in all (4 bytes each), so that a stream of broad queries
 * cannot grow memory without end.
 */
const CACHED_LISTINGS = 256;
const CACHED_SLOTS = 1_000_000;

const EMPTY_SCOPE: ReadonlySet<number> = new Set();

const toVersionRecord = (stored: StoredVersion): VersionRecord => ({
  version: stored.version,
  releaseDate: stored.releaseDate,
  yanked: stored.yanked,
  artifactUrl: stored.artifactUrl,
  manifestUrl: stored.manifestUrl,
  requiresPlatform: stored.requiresPlatform,
  requiresSdk: stored.requiresSdk,
  changelog: stored.changelog,
  // Versions published before manifests existed have none.
  manifest: stored.manifest ?? null,
});

/**
 * The marketplace catalog: extensions, their versions and the semver rules,
 * the browse and search read side, and the audit trail of every change.
 *
 * Reads never wait for the store: every extension is in memory, with an n-gram
 * index for search, a precomputed order by (name, extensionKey), per-extension
 * summary and detail objects, and a small cache of recent listings. A change
 * validates against the store's current extension inside the store's update
 * (so concurrent changes, on any daemon, cannot both pass a check), then the
 * extension is read back into memory before the change returns (ReadBack, as
 * workspaces and extension configuration do). Changes other daemons make are
 * read back when the store reports them.
 */
export class CatalogService {
  private readonly entries: Entry[] = [];
  private readonly byKey = new Map<string, Entry>();
  /** Read-backs from the store, one at a time, in the order asked for. */
  private reloads: Promise<void> = Promise.resolve();
  private readonly readBack = new ReadBack<string>((key) => this.reload(key));
  private readonly index = new SearchIndex();
  private readonly byCategory = new Map<string, Set<number>>();
  /** slot → the category it is filed under in byCategory. */
  private readonly filedUnder: string[] = [];
  /** Slots by (name, extensionKey), and each slot's position in that order; null until needed after a change. */
  private ordering: { slots: Int32Array; rank: Int32Array } | null = null;
  private readonly listings = new Map<string, Int32Array>();
  private cachedSlots = 0;
  private categoryCounts: CategoryCount[] | null = null;
  /** The event types of the built-ins and of every version's manifest, kept as extensions are put. */
  readonly eventTypes: EventTypeCatalog;

  private constructor(
    private readonly store: CatalogStore,
    private readonly fullNameOf: (userId: string) => string | undefined,
    builtInEventTypes: readonly BuiltInEventType[],
  ) {
    this.eventTypes = new EventTypeCatalog(builtInEventTypes);
  }

  static async open(store: CatalogStore, options: CatalogOptions): Promise<CatalogService> {
    const catalog = new CatalogService(store, options.fullNameOf, options.builtInEventTypes ?? []);
    for (const extension of await store.loadAll()) catalog.put(extension);
    catalog.index.trim();
    store.onChange((extensionKey) => void catalog.reload(extensionKey).catch(() => undefined));
    return catalog;
  }

  get size(): number {
    return this.entries.length;
  }

  // ---- the interface other domains use ----

  has(extensionKey: string): boolean {
    return this.byKey.has(extensionKey);
  }

  /** Throws NOT_FOUND for an unknown extension or version. */
  versionRecord(extensionKey: string, version: string): VersionRecord {
    return toVersionRecord(findVersion(this.require(extensionKey).extension, version));
  }

  /** Newest first; throws NOT_FOUND for an unknown extension. */
  versions(extensionKey: string): readonly StoredVersion[] {
    return this.require(extensionKey).extension.versions;
  }

  /** The contract's latestVersion (null without versions); throws NOT_FOUND for an unknown extension. */
  latestVersion(extensionKey: string): string | null {
    return this.detailOf(this.require(extensionKey)).latestVersion;
  }

  // ---- browse ----

  /**
   * Every search term (whitespace-separated, case-insensitive) must occur in the
   * key, name or description; the category must match exactly, ignoring case.
   * Sorted by name (case-insensitive), then extensionKey.
   */
  browse(input: BrowseInput): BrowsePage {
    const terms = input.search ? [...new Set(input.search.toLowerCase().split(/\s+/).filter(Boolean))].sort() : [];
    const slots = this.matching(terms, input.category?.toLowerCase());
    const page = slots.subarray(input.offset, input.offset + input.limit);
    const items = Array.from(page, (slot) => this.summaryOf(this.entries[slot]!));
    return { items, total: slots.length };
  }

  detail(extensionKey: string): ExtensionDetail {
    return this.detailOf(this.require(extensionKey));
  }

  /**
   * The detail with `compatibleVersion`: the highest non-yanked version whose
   * requirements the given platform and SDK versions meet (a requirement on
   * what is not given is not checked), stable before prerelease; null when none.
   */
  compatibleDetail(extensionKey: string, runs: Runtime): ExtensionDetail {
    const entry = this.require(extensionKey);
    return { ...this.detailOf(entry), compatibleVersion: compatibleVersionOf(entry.extension.versions, runs) };
  }

  /** Every category in use, with its number of extensions, sorted by category. */
  categories(): CategoryCount[] {
    this.categoryCounts ??= [...this.byCategory]
      .map(([category, slots]) => Object.freeze({ category, count: slots.size }))
      .sort((a, b) => compareText(a.category, b.category));
    return this.categoryCounts;
  }

  /** Newest first; each actor named by their current fullName while the user exists. */
  async auditTrail(filter: AuditFilter): Promise<AuditRecord[]> {
    if (filter.extensionKey !== undefined && !this.byKey.has(filter.extensionKey)) throw notFound(`extension ${filter.extensionKey} not found`);
    const records = await this.store.auditTrail(filter);
    return records.map((record) => {
      const fullName = this.fullNameOf(record.actor.id);
      return fullName === undefined ? record : { ...record, actor: { ...record.actor, fullName } };
    });
  }

  // ---- changes ----

  async create(actor: Actor, input: CreateExtensionInput): Promise<ExtensionDetail> {
    const key = input.extensionKey;
    const permissions = checkPermissions(key, input.permissions ?? []);
    // Checked here to answer early; the store refuses a duplicate however it arrives.
    if (this.byKey.has(key)) throw extensionExists(key);
    const now = new Date().toISOString();
    const extension: StoredExtension = {
      extensionKey: key,
      name: input.name,
      description: input.description ?? '',
      category: input.category ?? DEFAULT_CATEGORY,
      permissions,
      createdBy: actor.id,
      authorName: actor.fullName,
      createdAt: now,
      updatedAt: now,
      versions: [],
    };
    const changes: Record<string, FieldChange> = {};
    for (const field of ['name', 'description', 'category', 'permissions'] as const) {
      changes[field] = { from: null, to: extension[field] };
    }
    await this.readBack.storing(key, this.store.create(extension, auditRecord(actor, 'create', key, now, { changes })));
    return this.detailOf(this.require(key));
  }

  /** Changes only what differs; a patch that changes nothing writes nothing. */
  async update(actor: Actor, extensionKey: string, patch: UpdateExtensionInput): Promise<ExtensionDetail> {
    if (patch.extensionKey !== undefined && patch.extensionKey !== extensionKey) {
      throw invalid(
        'extensionKey',
        `extensionKey must equal the key in the path (${extensionKey}); an extension cannot be renamed`,
      );
    }
    const permissions = patch.permissions && checkPermissions(extensionKey, patch.permissions);
    await this.change(extensionKey, (current) => {
      const next: StoredExtension = { ...current };
      const changes: Record<string, FieldChange> = {};
      for (const field of ['name', 'description', 'category'] as const) {
        const value = patch[field];
        if (value === undefined || value === current[field]) continue;
        changes[field] = { from: current[field], to: value };
        next[field] = value;
      }
      if (permissions && permissions.join('\n') !== current.permissions.join('\n')) {
        changes.permissions = { from: current.permissions, to: permissions };
        next.permissions = permissions;
      }
      if (Object.keys(changes).length === 0) return null;
      next.updatedAt = new Date().toISOString();
      return { next, record: auditRecord(actor, 'update', extensionKey, next.updatedAt, { changes }) };
    });
    return this.detailOf(this.require(extensionKey));
  }

  /** `publishedAt` backdates a version (the development seed); the API always publishes now. */
  async publishVersion(
    actor: Actor,
    extensionKey: string,
    input: PublishVersionInput,
    publishedAt = new Date(),
  ): Promise<VersionRecord> {
    const manifest = input.manifest ? parseManifest(extensionKey, input.version, input.manifest) : null;
    const at = publishedAt.toISOString();
    const version: StoredVersion = {
      version: input.version,
      releaseDate: at.slice(0, 10),
      yanked: false,
      artifactUrl: input.artifactUrl,
      manifestUrl: input.manifestUrl ?? null,
      requiresPlatform: input.requiresPlatform ?? null,
      requiresSdk: input.requiresSdk ?? null,
      changelog: input.changelog ?? null,
      manifest,
      publishedAt: at,
    };
    await this.change(extensionKey, (current) => {
      const clash = current.versions.find((published) => samePrecedence(published.version, input.version));
      if (clash?.version === input.version) {
        throw conflict(
          `version ${input.version} of ${extensionKey} is already published` +
            (clash.yanked ? ' (yanked: a published version number is never reused)' : ''),
        );
      }
      if (clash) {
        throw conflict(
          `version ${input.version} has the same precedence as the published ${clash.version} of ${extensionKey} ` +
            '(they differ only in build metadata)',
        );
      }
      if (manifest?.publishes) this.eventTypes.assertNoRedefinition(current, manifest.publishes);
      const now = new Date().toISOString();
      const versions = [...current.versions, version].sort((a, b) => newestFirst(a.version, b.version));
      return {
        next: { ...current, versions, updatedAt: now },
        record: auditRecord(actor, 'publish', extensionKey, now, { version: input.version }),
      };
    });
    return toVersionRecord(version);
  }

  /** Idempotent: yanking a yanked version changes nothing and records nothing. */
  async yank(actor: Actor, extensionKey: string, version: string, reason?: string): Promise<void> {
    await this.setYanked(actor, extensionKey, version, true, reason);
  }

  /** Idempotent: unyanking an available version changes nothing and records nothing. */
  unyank(actor: Actor, extensionKey: string, version: string): Promise<VersionRecord> {
    return this.setYanked(actor, extensionKey, version, false);
  }

  // ---- internals ----

  private async setYanked(
    actor: Actor,
    extensionKey: string,
    version: string,
    yanked: boolean,
    reason?: string,
  ): Promise<VersionRecord> {
    let answer: StoredVersion | undefined;
    await this.change(extensionKey, (current) => {
      const target = findVersion(current, version);
      answer = target;
      if (target.yanked === yanked) return null;
      const changed: StoredVersion = { ...target, yanked };
      answer = changed;
      const now = new Date().toISOString();
      return {
        next: { ...current, versions: current.versions.map((stored) => (stored === target ? changed : stored)), updatedAt: now },
        record: auditRecord(actor, yanked ? 'yank' : 'unyank', extensionKey, now, reason === undefined ? { version } : { version, reason }),
      };
    });
    return toVersionRecord(answer!);
  }

  private require(extensionKey: string): Entry {
    const entry = this.byKey.get(extensionKey);
    if (!entry) throw notFound(`extension ${extensionKey} not found`);
    return entry;
  }

  /** A change through the store's read-modify-write, then read back into memory. */
  private async change(extensionKey: string, change: Parameters<CatalogStore['update']>[1]): Promise<void> {
    await this.readBack.storing(extensionKey, this.store.update(extensionKey, change));
  }

  /** Stops read-backs still to be retried: the store is about to close. */
  close(): void {
    this.readBack.close();
  }

  /**
   * Brings one extension (null: every extension) in memory up to the store.
   * Read-backs run one after the other, each reading after the previous one
   * finished, so the last one asked for leaves the latest state.
   */
  private reload(extensionKey: string | null): Promise<void> {
    const next = this.reloads.then(async () => {
      const extensions = extensionKey === null ? await this.store.loadAll() : [await this.store.get(extensionKey)];
      for (const extension of extensions) if (extension) this.put(extension);
    });
    // One failed read (the database away) must not stop the read-backs after it.
    this.reloads = next.catch(() => undefined);
    return next;
  }

  /** Adds or replaces an extension in memory, rebuilding what is derived from it when it changed. */
  private put(extension: StoredExtension): void {
    const known = this.byKey.get(extension.extensionKey);
    if (known?.extension === extension) return;
    const entry: Entry = known ?? { slot: this.entries.length, extension, listedAs: '', summary: null, detail: null };
    if (!known) {
      this.entries.push(entry);
      this.byKey.set(extension.extensionKey, entry);
    }
    entry.extension = extension;
    entry.summary = null;
    entry.detail = null;
    this.eventTypes.putExtension(extension);
    const listedAs = `${extension.name}\n${extension.description}\n${extension.category}`;
    if (listedAs === entry.listedAs) return;
    entry.listedAs = listedAs;
    this.index.set(entry.slot, [extension.extensionKey, extension.name, extension.description]);
    const previous = this.filedUnder[entry.slot];
    if (previous !== extension.category) {
      if (previous !== undefined) {
        const slots = this.byCategory.get(previous)!;
        slots.delete(entry.slot);
        if (slots.size === 0) this.byCategory.delete(previous);
      }
      const slots = this.byCategory.get(extension.category) ?? new Set<number>();
      slots.add(entry.slot);
      this.byCategory.set(extension.category, slots);
      this.filedUnder[entry.slot] = extension.category;
    }
    this.ordering = null;
    this.listings.clear();
    this.cachedSlots = 0;
    this.categoryCounts = null;
  }

  /** The slots of a listing, in order: from the cache, or from the index and the precomputed ranks. */
  private matching(terms: readonly string[], category: string | undefined): Int32Array {
    const ordering = this.order();
    if (terms.length === 0 && category === undefined) return ordering.slots;
    const cacheKey = `${category ?? ''}\n${terms.join(' ')}`;
    const cached = this.listings.get(cacheKey);
    if (cached) return cached;
    const scope = category === undefined ? null : (this.byCategory.get(category) ?? EMPTY_SCOPE);
    const matches = terms.length > 0 ? this.index.query(terms, scope) : [...scope!];
    // Sorting the ranks as numbers (a typed array, no comparator) and mapping back is the cheap way to order.
    const slots = new Int32Array(matches.length);
    for (let i = 0; i < matches.length; i += 1) slots[i] = ordering.rank[matches[i]!]!;
    slots.sort();
    for (let i = 0; i < slots.length; i += 1) slots[i] = ordering.slots[slots[i]!]!;
    this.remember(cacheKey, slots);
    return slots;
  }

  /** Adds a listing to the cache, forgetting the oldest ones beyond its bounds. */
  private remember(cacheKey: string, slots: Int32Array): void {
    this.listings.set(cacheKey, slots);
    this.cachedSlots += slots.length;
    for (const [oldestKey, oldest] of this.listings) {
      if (this.listings.size <= CACHED_LISTINGS && this.cachedSlots <= CACHED_SLOTS) break;
      this.listings.delete(oldestKey);
      this.cachedSlots -= oldest.length;
    }
  }

  private order(): { slots: Int32Array; rank: Int32Array } {
    if (this.ordering) return this.ordering;
    const keyed = this.entries.map((entry) => {
      const { name, extensionKey } = entry.extension;
      return { slot: entry.slot, lower: name.toLowerCase(), name, extensionKey };
    });
    keyed.sort(
      (a, b) => compareText(a.lower, b.lower) || compareText(a.name, b.name) || compareText(a.extensionKey, b.extensionKey),
    );
    const slots = Int32Array.from(keyed, (item) => item.slot);
    const rank = new Int32Array(this.entries.length);
    slots.forEach((slot, position) => (rank[slot] = position));
    this.ordering = { slots, rank };
    return this.ordering;
  }

  private summaryOf(entry: Entry): ExtensionSummary {
    const { extension } = entry;
    const author = this.fullNameOf(extension.createdBy) ?? extension.authorName;
    if (entry.summary?.author !== author) {
      entry.summary = Object.freeze({
        extensionKey: extension.extensionKey,
        name: extension.name,
        description: extension.description,
        category: extension.category,
        latestVersion: this.detailOf(entry).latestVersion,
        author,
      });
    }
    return entry.summary;
  }

  private detailOf(entry: Entry): ExtensionDetail {
    if (entry.detail) return entry.detail;
    const { extension } = entry;
    entry.detail = Object.freeze({
      extensionKey: extension.extensionKey,
      name: extension.name,
      description: extension.description,
      category: extension.category,
      latestVersion: latestVersionOf(extension.versions),
      versions: Object.freeze(
        extension.versions.map(({ version, releaseDate, yanked }) => Object.freeze({ version, releaseDate, yanked })),
      ),
      permissions: Object.freeze([...extension.permissions]),
    });
    return entry.detail;
  }
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function findVersion(extension: StoredExtension, version: string): StoredVersion {
  const found = extension.versions.find((stored) => stored.version === version);
  if (!found) throw notFound(`extension ${extension.extensionKey} has no version ${version}`);
  return found;
}

function auditRecord(
  actor: Actor,
  action: AuditAction,
  extensionKey: string,
  at: string,
  details: Pick<AuditRecord, 'version' | 'reason' | 'changes'>,
): AuditRecord {
  return { id: randomUUID(), at, actor: { id: actor.id, email: actor.email }, action, extensionKey, ...details };
}
