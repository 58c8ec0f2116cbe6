import * as v from 'valibot';
import { AuditAction, ConfigFieldType, DeliveryStatus, SubscriberKind } from './resources.js';
import { CursorParam, Email, EventKey, HttpUrl, isPlainObject, jsonObject, NewPassword, NonEmptyString, QueryInstant, QueryInt, SemVer, Slug, Uuid } from './schemas.js';

/**
 * What each route accepts, as valibot schemas: the daemon validates its
 * requests with them, the API document describes them, and the typed client
 * takes their input types. Node-free (the console bundles it).
 */

// Path parameters.
export const WorkspaceParams = v.object({ id: Slug });
export const UserParams = v.object({ id: Uuid('must be a user id') });
export const ExtensionParams = v.object({ key: Slug });
export const VersionParams = v.object({ key: Slug, version: SemVer });
export const MemberParams = v.object({ id: Slug, userId: Uuid('must be a user id') });
export const InstallationParams = v.object({ id: Slug, key: Slug });
export const SubscriptionParams = v.object({ id: Slug, subscriptionId: Uuid('must be a subscription id') });
export const EventParams = v.object({ id: Slug, eventId: Uuid('must be an event id') });
export const ChannelParams = v.object({ id: Slug, channel: v.pipe(v.string(), v.minLength(1), v.maxLength(200)) });
export const DeadLetterParams = v.object({ id: Uuid('must be a dead letter id') });
/** A delivery id as the daemon makes them (`msg_…`); one it never made is simply not found. */
export const DeliveryParams = v.object({
  id: Slug,
  deliveryId: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be a delivery id')),
});
/** Any key: one that names no handler is 404. */
export const WebhookParams = v.object({ extensionKey: v.string() });
const FieldName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z][A-Za-z0-9_.-]{0,127}$/, 'must start with a letter, then letters, digits, _, . or - (at most 128)'),
);
export const ConfigFieldParams = v.object({ key: Slug, field: FieldName });

// Authentication and users.
export const LoginBody = jsonObject({
  email: v.pipe(v.string(), v.maxLength(254, 'must be at most 254 characters')),
  password: v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters')),
});
export const ChangePasswordBody = jsonObject({
  currentPassword: v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters')),
  newPassword: NewPassword,
});
export const ROLES = ['ADMIN', 'USER'] as const;
const Roles = v.pipe(
  v.array(v.picklist(ROLES, 'must be ADMIN or USER')),
  v.minLength(1, 'must name at least one role'),
  v.transform((roles) => [...new Set(roles)]),
);
const FullName = NonEmptyString(200);
export const CreateUserBody = jsonObject({ email: Email, fullName: FullName, password: NewPassword, roles: v.optional(Roles) });
export const PatchUserBody = v.pipe(
  jsonObject({ fullName: v.optional(FullName), roles: v.optional(Roles), active: v.optional(v.boolean()) }),
  v.check((body) => Object.keys(body).length > 0, 'must change at least one of fullName, roles, active'),
);
export const ResetPasswordBody = jsonObject({ password: NewPassword });

// The marketplace.
const CatalogUrl = v.pipe(
  v.string(),
  v.maxLength(2048, 'must be at most 2048 characters'),
  v.check((text) => {
    if (!URL.canParse(text)) return false;
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  }, 'must be an http:// or https:// URL'),
);
const Description = v.pipe(v.string(), v.trim(), v.maxLength(2000, 'must be at most 2000 characters'));
/** Categories are tags: compared case-insensitively, so stored in lower case. */
const Category = v.pipe(NonEmptyString(64), v.toLowerCase());
/** Shape only; that each name starts with the extension's own key is a catalog rule. */
const Permissions = v.pipe(
  v.array(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'))),
  v.maxLength(100, 'must list at most 100 permissions'),
  v.transform((names) => [...new Set(names)]),
);

/** The fields of a new extension (also the seed catalog's). */
export const extensionFields = {
  extensionKey: Slug,
  name: NonEmptyString(100),
  description: v.optional(Description),
  category: v.optional(Category),
  permissions: v.optional(Permissions),
};
export const CreateExtensionBody = jsonObject(extensionFields);

const UPDATABLE = ['name', 'description', 'category', 'permissions'] as const;
/** `extensionKey` may be repeated from the path (clients that send the whole resource back), never changed. */
export const UpdateExtensionBody = v.pipe(
  jsonObject({
    extensionKey: v.optional(v.string()),
    name: v.optional(extensionFields.name),
    description: v.optional(Description),
    category: v.optional(Category),
    permissions: v.optional(Permissions),
  }),
  v.check((body) => UPDATABLE.some((field) => body[field] !== undefined), `must change at least one of ${UPDATABLE.join(', ')}`),
);

/** The fields of a new version (also the seed catalog's). Optional fields accept null as "absent", so a client may send a version record back as it got it. */
export const versionFields = {
  version: SemVer,
  artifactUrl: CatalogUrl,
  manifestUrl: v.nullish(CatalogUrl),
  requiresPlatform: v.nullish(SemVer),
  requiresSdk: v.nullish(SemVer),
  changelog: v.nullish(v.pipe(v.string(), v.maxLength(20_000, 'must be at most 20000 characters'))),
};
/** Its shape is the manifest's JSON Schema's to check (the catalog does, with the JSON path of each problem). */
export const ManifestBody = v.pipe(
  v.custom<Record<string, unknown>>(isPlainObject, 'must be a JSON object: the extension manifest'),
  v.metadata({ documentedAs: { $ref: '#/components/schemas/ExtensionManifest' } }),
);
export const PublishVersionBody = jsonObject({ ...versionFields, manifest: v.nullish(ManifestBody) });

/** A platform or SDK version a caller runs, to find the versions compatible with it. */
export const ExtensionQuery = v.object({
  platformVersion: v.optional(SemVer),
  sdkVersion: v.optional(SemVer),
});

export const EventTypeParams = v.object({ eventKey: EventKey });

/** Empty parameters (`?category=`) mean "no filter". Unknown parameters are ignored (cache busters). */
const optionalText = (max: number) =>
  v.optional(
    v.pipe(
      v.string(),
      v.maxLength(max, `must be at most ${max} characters`),
      v.transform((text) => text.trim() || undefined),
    ),
  );

export const MAX_BROWSE_OFFSET = 999_999_999;
export const BrowseQuery = v.object({
  search: optionalText(200),
  category: optionalText(64),
  limit: v.optional(QueryInt(1, 500), '50'),
  offset: v.optional(QueryInt(0, MAX_BROWSE_OFFSET), '0'),
  cursor: CursorParam,
});
export const YankQuery = v.object({ reason: optionalText(500) });

export const MAX_AUDIT_PAGE = 1000;
export const MAX_AUDIT_OFFSET = 100_000;
export const AuditQuery = v.object({
  extensionKey: v.optional(Slug),
  /** Only the records of this version (publish, yank, unyank). */
  version: v.optional(SemVer),
  action: v.optional(v.picklist(AuditAction.options, 'must be create, update, publish, yank or unyank')),
  limit: v.optional(QueryInt(1, MAX_AUDIT_PAGE), '50'),
  /** Bounded: a read past the in-memory window keeps up to twice offset + limit records while it scans. */
  offset: v.optional(QueryInt(0, MAX_AUDIT_OFFSET), '0'),
  cursor: CursorParam,
});

export const ConfigBody = jsonObject({
  fields: v.pipe(
    v.array(
      jsonObject({
        name: FieldName,
        type: v.picklist(ConfigFieldType.options, 'must be STRING, NUMBER, BOOLEAN or SECRET'),
        value: v.union([v.pipe(v.string(), v.maxLength(65_536)), v.number(), v.boolean(), v.null()], 'must be a string, number, boolean or null'),
      }),
    ),
    v.minLength(1, 'must name at least one field'),
    v.maxLength(200, 'at most 200 fields at once'),
  ),
});

// API tokens.
/** What a personal API token may do; each route names the one it needs (src/contract/endpoints.ts). */
export const SCOPES = [
  'catalog:write',
  'events:publish',
  'events:read',
  'deliveries:read',
  'dead-letters:write',
  'workspaces:write',
  'users:write',
  'tokens:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const MAX_TOKENS_PER_USER = 100;
export const CreateTokenBody = jsonObject({
  name: NonEmptyString(100),
  scopes: v.pipe(
    v.array(v.picklist(SCOPES, `must be one of ${SCOPES.join(', ')}`)),
    v.minLength(1, 'must name at least one scope'),
    v.transform((scopes) => SCOPES.filter((scope) => scopes.includes(scope))),
  ),
  workspaces: v.optional(
    v.pipe(
      v.array(Slug),
      v.minLength(1, 'must name at least one workspace, or be left out for every workspace'),
      v.maxLength(100, 'must name at most 100 workspaces'),
      v.transform((ids) => [...new Set(ids)]),
    ),
  ),
  expiresInDays: v.optional(v.pipe(v.number(), v.integer('must be a whole number of days'), v.minValue(1), v.maxValue(365)), 90),
});
export const TokenParams = v.object({ tokenId: Uuid('must be a token id') });

// Workspaces, installations and subscriptions.
export const CreateWorkspaceBody = jsonObject({ id: Slug, name: NonEmptyString(200) });
export const RenameWorkspaceBody = jsonObject({ name: NonEmptyString(200) });
export const DeleteWorkspaceQuery = v.object({ force: v.optional(v.picklist(['true', 'false'], 'must be true or false')) });

export const VERSION_REQUEST_RULE = 'must be a version, "latest" or a semver range such as ^1.2, ~1.4 or 1.x';
/** The characters of a version, `latest` or a semver range; that a range parses is checked where it is resolved. */
const VersionRequest = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(256),
  v.regex(/^[0-9A-Za-z.*^~<>=|+ -]+$/, VERSION_REQUEST_RULE),
);
/** The permissions an ADMIN grants: exactly those the version's manifest asks for. */
const GrantPermissions = v.pipe(
  v.array(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'))),
  v.maxLength(100, 'must list at most 100 permissions'),
  v.transform((names) => [...new Set(names)].sort()),
);
/** Where the subscriptions a manifest declares as EXTERNAL_SERVICE deliver (each entry's path is appended). */
const wiringFields = { grantPermissions: v.optional(GrantPermissions), serviceBaseUrl: v.optional(HttpUrl) };
export const InstallBody = jsonObject({ extensionKey: Slug, version: v.optional(VersionRequest), ...wiringFields });
export const UpdateInstallationBody = v.pipe(
  jsonObject({
    enabled: v.optional(v.boolean()),
    version: v.optional(VersionRequest),
    allowDowngrade: v.optional(v.boolean()),
    ...wiringFields,
  }),
  v.check((body) => body.enabled !== undefined || body.version !== undefined, 'must change enabled or version'),
);
export const SubscribeBody = jsonObject({
  eventKey: EventKey,
  extensionKey: Slug,
  kind: v.picklist(SubscriberKind.options, 'must be EXTERNAL_SERVICE or IN_PROCESS'),
  serviceBaseUrl: v.optional(HttpUrl),
});
export const ChangeSubscriptionBody = v.pipe(
  jsonObject({ enabled: v.optional(v.boolean()), serviceBaseUrl: v.optional(HttpUrl) }),
  v.check((body) => body.enabled !== undefined || body.serviceBaseUrl !== undefined, 'must change enabled or serviceBaseUrl'),
);

// Events and deliveries.
/** Nesting deeper than this is refused: nothing legitimate needs it, and deep values cost stack later. */
export const MAX_PAYLOAD_DEPTH = 32;

function deeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  for (const child of Object.values(value)) if (deeperThan(child, limit - 1)) return true;
  return false;
}

const isJsonObject = (input: unknown): input is Record<string, unknown> => typeof input === 'object' && input !== null && !Array.isArray(input);

export const Payload = v.pipe(
  v.custom<Record<string, unknown>>(isJsonObject, 'Invalid type: Expected a JSON object'),
  v.check((payload) => !deeperThan(payload, MAX_PAYLOAD_DEPTH), `must not nest deeper than ${MAX_PAYLOAD_DEPTH} levels`),
);

export const PublishEventBody = jsonObject({
  eventKey: EventKey,
  schemaVersion: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  actor: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(255))),
  payload: v.optional(Payload),
});
/**
 * `Idempotency-Key` on a publish: any 1-255 visible ASCII characters (no
 * space, no control character), chosen by the client, a new one per event it
 * means to publish. A header sent twice arrives joined by ", " and is refused.
 */
export const IdempotencyKey = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(255, 'must be at most 255 characters'),
  v.regex(/^[\x21-\x7e]*$/, 'must be visible ASCII characters only (no spaces)'),
  v.description(
    'A key of your choice, new for each event: within 24 hours (PLATFORM_IDEMPOTENCY_TTL_SECONDS) the same key in the workspace with the same body bytes is answered as the first request was, with meta.idempotentReplay, and publishes nothing; with another body it is 409 IDEMPOTENCY_KEY_REUSED.',
  ),
);
export const PublishEventHeaders = v.object({ 'Idempotency-Key': v.optional(IdempotencyKey) });
export const TestSubscriptionBody = jsonObject({
  payload: v.optional(v.custom<Record<string, unknown>>(isJsonObject, 'must be a JSON object')),
});

/**
 * The events list's filter by how an event's deliveries stand: `failed`, at
 * least one dead delivery; `pending`, at least one still pending; `delivered`,
 * at least one and every one succeeded; `none`, no delivery at all.
 */
export const DeliveryFilter = v.picklist(['failed', 'pending', 'delivered', 'none'], 'must be one of failed, pending, delivered, none');
export type DeliveryFilter = v.InferOutput<typeof DeliveryFilter>;

export const EventsQuery = v.object({
  eventKey: v.optional(EventKey),
  deliveries: v.optional(DeliveryFilter),
  since: v.optional(QueryInstant),
  until: v.optional(QueryInstant),
  limit: v.optional(QueryInt(1, 1000), '50'),
  cursor: CursorParam,
});
export const DeliveriesQuery = v.object({
  status: v.optional(v.picklist(DeliveryStatus.options, `must be one of ${DeliveryStatus.options.join(', ')}`)),
  subscriptionId: v.optional(v.pipe(v.string(), v.maxLength(100, 'must be at most 100 characters'))),
  eventKey: v.optional(EventKey),
  since: v.optional(QueryInstant),
  until: v.optional(QueryInstant),
  limit: v.optional(QueryInt(1, 500), '50'),
  cursor: v.optional(v.pipe(v.string(), v.maxLength(200, 'is not a cursor of this listing'))),
});

/** A channel keeps up to 10,000 messages; one page carries at most this many. */
const MESSAGES_PER_ANSWER = 1000;
export const MessagesQuery = v.object({ limit: v.optional(QueryInt(1, MESSAGES_PER_ANSWER), '50'), cursor: CursorParam });

// Dead letters.
export const MAX_DEAD_LETTER_OFFSET = 1_000_000_000;
const DeadLetterFilter = { workspaceId: v.optional(Slug), eventKey: v.optional(EventKey), extensionKey: v.optional(Slug) };
export const DeadLettersQuery = v.object({
  ...DeadLetterFilter,
  limit: v.optional(QueryInt(1, 500), '50'),
  offset: v.optional(QueryInt(0, MAX_DEAD_LETTER_OFFSET), '0'),
  cursor: CursorParam,
});
export const ReplayMatchingBody = jsonObject({
  ...DeadLetterFilter,
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000))),
});
export const DiscardMatchingBody = jsonObject(DeadLetterFilter);

// Inbound webhooks and operations.
/** The requests kept per extension, newest first. */
export const WEBHOOK_REQUESTS_KEPT = 1000;
export const WebhookRequestsQuery = v.object({
  limit: v.optional(QueryInt(1, WEBHOOK_REQUESTS_KEPT), '50'),
  cursor: v.optional(v.string()),
});
export const BackupQuery = v.object({ includeKeys: v.optional(v.picklist(['true', 'false']), 'false') });
