import { onScopeDispose, reactive, watch } from 'vue';
import { DEFAULT_SUBSCRIPTION_PATH, deliveryUrlOf, type Manifest } from '../contract/manifest';
import { isStrictSemver, problemWith, Slug } from '../contract/schemas';
import type { ExtensionDetail, Health, SubscriberKind, Subscription } from '../contract/types';
import { ApiError, call, messageOf } from './api';

/**
 * What a version's manifest will do to a workspace when it is installed or an
 * installation moves to it, worked out before asking the daemon: the
 * permissions to consent to, the subscriptions it makes, the configuration
 * still missing. The daemon applies the manifest and has the last word; these
 * are its rules (docs/api.md, Installations), read from the same answers.
 */

/** A subscription a manifest declares, as an install or a change of version will leave it. */
export interface PlannedSubscription {
  eventKey: string;
  kind: SubscriberKind;
  /** EXTERNAL_SERVICE: the path below the service URL; null for IN_PROCESS. */
  path: string | null;
  /** The extension's subscription to the same event and kind that already exists: kept (with its secret), not made again. */
  kept: Subscription | null;
}

export interface ManifestPlan {
  extensionKey: string;
  version: string;
  manifest: Manifest | null;
  /** Every permission the version asks for: consent lists exactly these. */
  permissions: string[];
  /** Those not granted before (every one at install): while there are any, consent is needed. */
  newPermissions: string[];
  subscriptions: PlannedSubscription[];
  /** Where new external subscriptions deliver when no service URL is given: the service of one the extension has already, else null. */
  reusedServiceUrl: string | null;
  /** A change of version moves a kept external subscription to the new manifest's path; an install leaves it as it is. */
  movesKept: boolean;
  /** The configuration fields the manifest marks required that are not set. */
  missingConfiguration: string[];
}

/** Works out a plan from a version's manifest, the extension's subscriptions in the workspace, what was granted before and the fields set. */
export function planOf(input: {
  extensionKey: string;
  version: string;
  manifest: Manifest | null;
  existing: readonly Subscription[];
  granted: readonly string[];
  configured: readonly string[];
  movesKept: boolean;
}): ManifestPlan {
  const own = input.existing.filter((subscription) => subscription.extensionKey === input.extensionKey);
  const permissions = [...(input.manifest?.permissions ?? [])].sort();
  const configured = new Set(input.configured);
  const wiredTo = own.find((subscription) => subscription.kind === 'EXTERNAL_SERVICE' && subscription.serviceBaseUrl !== null);
  return {
    extensionKey: input.extensionKey,
    version: input.version,
    manifest: input.manifest,
    permissions,
    newPermissions: permissions.filter((permission) => !input.granted.includes(permission)),
    subscriptions: (input.manifest?.subscribes ?? []).map((entry) => ({
      eventKey: entry.eventKey,
      kind: entry.kind,
      path: entry.kind === 'EXTERNAL_SERVICE' ? (entry.path ?? DEFAULT_SUBSCRIPTION_PATH) : null,
      kept: own.find((subscription) => subscription.eventKey === entry.eventKey && subscription.kind === entry.kind) ?? null,
    })),
    reusedServiceUrl: wiredTo?.serviceBaseUrl ?? null,
    movesKept: input.movesKept,
    missingConfiguration: (input.manifest?.configuration ?? [])
      .filter((field) => field.required === true && !configured.has(field.name))
      .map((field) => field.name),
  };
}

/** The manifest declares external subscriptions: the form asks for the service URL. */
export const hasExternal = (plan: ManifestPlan | null) => (plan?.subscriptions ?? []).some((row) => row.kind === 'EXTERNAL_SERVICE');

/** An external subscription is to be made (not kept): a change of version asks for the service URL then. */
export const makesExternal = (plan: ManifestPlan | null) => (plan?.subscriptions ?? []).some((row) => row.kind === 'EXTERNAL_SERVICE' && row.kept === null);

/** An external subscription is to be made and no existing one gives a service to reuse: the service URL is required. */
export const needsServiceUrl = (plan: ManifestPlan | null) => plan !== null && plan.reusedServiceUrl === null && makesExternal(plan);

/** Where a planned subscription will deliver, with the service URL typed so far; null while it is not known (or in process). */
export function plannedUrl(plan: ManifestPlan, row: PlannedSubscription, serviceUrl: string): string | null {
  if (row.path === null) return null;
  if (row.kept) {
    if (!plan.movesKept) return row.kept.deliveryUrl;
    return row.kept.serviceBaseUrl === null ? null : deliveryUrlOf(row.kept.serviceBaseUrl, row.path);
  }
  const base = serviceUrl.trim() || plan.reusedServiceUrl;
  return base ? deliveryUrlOf(base, row.path) : null;
}

/** The permissions a 409 CONSENT_REQUIRED names, or null for any other error. */
export function consentAskedBy(error: unknown): string[] | null {
  if (!(error instanceof ApiError) || error.code !== 'CONSENT_REQUIRED') return null;
  return [...(error.meta?.permissions ?? [])].sort();
}

/** A 400 that asks for the service URL (an external subscription to make and nowhere to deliver). */
export const asksForServiceUrl = (error: unknown) =>
  error instanceof ApiError && error.code === 'VALIDATION_ERROR' && (error.meta?.issues ?? []).some((issue) => issue.path === 'serviceBaseUrl');

let health: Promise<Health> | null = null;
/** The platform and plugin SDK versions this daemon runs (what `latest` is resolved for), asked once. */
function daemonVersions(): Promise<Health> {
  health ??= call('getHealth').then(
    (answer) => answer.data,
    (error: unknown) => {
      health = null;
      throw error;
    },
  );
  return health;
}

/** The plan of one version: its record and the extension's configuration, read together (the configuration needs an ADMIN). */
export async function loadPlan(input: {
  extensionKey: string;
  version: string;
  existing: readonly Subscription[];
  granted: readonly string[];
  movesKept: boolean;
}): Promise<ManifestPlan> {
  const [record, config] = await Promise.all([
    call('getVersion', { params: { key: input.extensionKey, version: input.version } }),
    call('getExtensionConfig', { params: { key: input.extensionKey } }),
  ]);
  const configured = config.data.fields.filter((field) => field.set).map((field) => field.name);
  return planOf({ ...input, manifest: record.data.manifest, configured });
}

/** Versions compare without their build metadata, as the daemon's precedence does. */
const withoutBuild = (version: string) => version.replace(/\+.*$/, '');

/** The version an install would get, as far as the console can tell without the daemon; `note` says why not when it cannot. */
export type Resolution = { version: string; how: string } | { version: null; note: string };

export function resolveForPreview(extension: ExtensionDetail, requested: string, daemon: Health): Resolution {
  const key = extension.extensionKey;
  if (extension.versions.length === 0) return { version: null, note: `${key} has no published version yet: there is nothing to install.` };
  if (requested === '' || requested === 'latest') {
    if (extension.compatibleVersion) return { version: extension.compatibleVersion, how: 'the newest version this daemon runs' };
    return {
      version: null,
      note: `No version of ${key} that is not yanked runs on this daemon (platform ${daemon.version}, plugin SDK ${daemon.sdkVersion}).`,
    };
  }
  if (isStrictSemver(requested)) {
    const entry = extension.versions.find((candidate) => withoutBuild(candidate.version) === withoutBuild(requested));
    if (!entry) return { version: null, note: `${key} has no version ${requested}.` };
    if (entry.yanked) return { version: null, note: `${key} ${entry.version} is yanked: it cannot be installed.` };
    return { version: entry.version, how: 'the version asked for' };
  }
  return {
    version: null,
    note: 'A range is resolved by the daemon when installing: if the version it picks asks for permissions, they are shown then for your consent.',
  };
}

/**
 * The preview of the install form: as the extension key and version are
 * typed, the catalog is searched (suggestions, and whether the key exists,
 * so that no unknown key is asked for), the version resolved as the daemon
 * would, and that version's plan loaded. `loading` holds from the first
 * keystroke until the plan (or the reason there is none) is known.
 */
export function useInstallPreview(input: () => { extensionKey: string; version: string }, existing: () => readonly Subscription[]) {
  const state = reactive({
    loading: false,
    suggestions: [] as Array<{ extensionKey: string; name: string }>,
    /** The extension's name once the key is found. */
    name: '',
    /** The versions of the extension found that are not yanked, newest first: the version field offers them. */
    versions: [] as string[],
    /** The key `versions` belongs to. */
    versionsOf: '',
    /** How the version was chosen ('the newest version this daemon runs', …). */
    how: '',
    /** Why there is nothing to preview (unknown key, range, yanked…); the daemon still decides at install. */
    note: '',
    error: '',
    plan: null as ManifestPlan | null,
  });
  const details = new Map<string, ExtensionDetail>();
  let searched = '';
  let generation = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function extensionNamed(key: string): Promise<ExtensionDetail | null> {
    const known = details.get(key);
    if (known) return known;
    if (searched !== key) {
      const { data, meta } = await call('listExtensions', { query: { search: key, limit: 20 } });
      state.suggestions = data.map(({ extensionKey, name }) => ({ extensionKey, name }));
      searched = key;
      // Beyond the first page of matches the key may exist still: asked for directly then.
      if (!data.some((item) => item.extensionKey === key) && meta.total <= data.length) return null;
    } else if (!state.suggestions.some((item) => item.extensionKey === key)) {
      return null;
    }
    const daemon = await daemonVersions();
    const { data } = await call('getExtension', { params: { key }, query: { platformVersion: daemon.version, sdkVersion: daemon.sdkVersion } });
    details.set(key, data);
    return data;
  }

  async function preview(key: string, requested: string, current: number): Promise<void> {
    const extension = await extensionNamed(key);
    if (current !== generation) return;
    if (!extension) {
      Object.assign(state, { note: `No extension ${key} in the catalog.` });
      return;
    }
    Object.assign(state, { name: extension.name, versions: extension.versions.filter((entry) => !entry.yanked).map((entry) => entry.version), versionsOf: key });
    const resolution = resolveForPreview(extension, requested, await daemonVersions());
    if (resolution.version === null) {
      state.note = resolution.note;
      return;
    }
    const plan = await loadPlan({ extensionKey: key, version: resolution.version, existing: existing(), granted: [], movesKept: false });
    if (current !== generation) return;
    Object.assign(state, { plan, how: resolution.how });
  }

  function update(): void {
    const { extensionKey, version } = input();
    const current = ++generation;
    clearTimeout(timer);
    Object.assign(state, { name: '', how: '', note: '', error: '', plan: null });
    if (state.versionsOf !== extensionKey) Object.assign(state, { versions: [], versionsOf: '' });
    if (problemWith(Slug, extensionKey) !== null) {
      state.loading = false;
      return;
    }
    state.loading = true;
    timer = setTimeout(() => {
      preview(extensionKey, version.trim(), current)
        .catch((error: unknown) => {
          if (current === generation) state.error = messageOf(error);
        })
        .finally(() => {
          if (current === generation) state.loading = false;
        });
    }, 250);
  }

  watch(() => `${input().extensionKey}\n${input().version}`, update);
  onScopeDispose(() => clearTimeout(timer));
  /** After an install the catalog's answers and the workspace's subscriptions may differ: everything is asked again. */
  function refresh(): void {
    details.clear();
    searched = '';
    update();
  }
  return Object.assign(state, { refresh });
}
