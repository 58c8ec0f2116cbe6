import * as v from 'valibot';
import type { ErrorCode } from './errors.js';
import * as request from './requests.js';
import type { Scope } from './requests.js';
import {
  ApiToken,
  AuditRecord,
  CategoryCount,
  ChannelSummary,
  ChatMessage,
  CreatedApiToken,
  CreatedSubscription,
  CursorMeta,
  DaemonStatus,
  DeadLetter,
  DeadLetterState,
  DeletedWorkspace,
  DeliveryRecord,
  DiscardedDeadLetters,
  EventWithDeliveries,
  ExtensionConfig,
  ExtensionDetail,
  ExtensionSummary,
  EventType,
  EventTypeDetail,
  Health,
  Installation,
  InstalledExtension,
  OffsetMeta,
  OwnInstallation,
  PageMeta,
  ListedEvent,
  PublishedMeta,
  Readiness,
  Redelivery,
  ReplayedDeadLetters,
  RotatedInstallationToken,
  RotatedSecret,
  Subscription,
  TestDelivery,
  User,
  VersionRecord,
  WarningsMeta,
  WebhookRequestEntry,
  Workspace,
  WorkspaceMember,
} from './resources.js';

/**
 * Who may call: anyone; any logged-in user; a member of the workspace named by
 * the path's `id` (or an ADMIN); an ADMIN; a metrics scraper (the metrics
 * token, or an ADMIN); or an extension's service with its installation token.
 * A personal API token acts as its user, within its scopes (see `scope`).
 */
export type Access = 'public' | 'user' | 'member' | 'admin' | 'scraper' | 'installation';

/** What a personal API token must grant to call a route; `any`: every token may. */
export type RequiredScope = Scope | 'any';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const TAGS = {
  operations: 'Health, readiness, metrics, status, backups and this document.',
  auth: 'Logging in and out, the caller’s own account, and personal API tokens for scripts.',
  users: 'User accounts (ADMIN).',
  marketplace: 'The extension catalog: browsing (public), publishing, yanking and configuring (ADMIN), and its audit trail.',
  workspaces: 'Workspaces and their members.',
  installations: 'Extensions installed in a workspace.',
  subscriptions: 'Which extension receives which events of a workspace, and how.',
  extension: 'What an installed extension’s own service calls with its installation token.',
  'event-types': 'The event types extensions publish, with the JSON Schema of each schemaVersion (public, like the catalog).',
  events: 'Publishing events, reading them and the record of their deliveries, and following them live.',
  'dead-letters': 'Deliveries that failed every attempt: inspect, replay, discard (ADMIN).',
  chat: 'The built-in chat extension’s channels.',
  webhooks: 'Inbound webhooks from outside services, and their request log.',
} as const;
export type Tag = keyof typeof TAGS;

/**
 * One route of the API: how it is called, what it accepts, what it answers.
 * The daemon's router, the OpenAPI document and the typed client are all
 * built from these declarations.
 */
export interface EndpointDeclaration {
  readonly method: HttpMethod;
  /** With `:name` for each path parameter. */
  readonly path: string;
  /** One line, imperative. */
  readonly summary: string;
  readonly tag: Tag;
  readonly access: Access;
  readonly params?: v.GenericSchema;
  readonly query?: v.GenericSchema;
  readonly body?: v.GenericSchema;
  /**
   * Request headers the route reads, keyed by name as the document spells it
   * (matched whatever the case): validated like the other inputs (400 naming
   * the header), documented as header parameters, sent by the typed client.
   */
  readonly headers?: v.ObjectSchema<v.ObjectEntries, undefined>;
  /** Success status: 200 unless given; 204 answers no body. */
  readonly status?: 200 | 201 | 202 | 204;
  /** `data` and `meta` of the success envelope (null when not given). */
  readonly data?: v.GenericSchema;
  readonly meta?: v.GenericSchema;
  /** The success answer is not the envelope (a stream, an archive, metrics, this document). */
  readonly answers?: { readonly contentType: string; readonly description: string };
  /**
   * The codes the route's own rules answer with. Those its access and inputs
   * imply (401, 403, 400, 413, 415, …) are added by `errorCodesOf`.
   */
  readonly errors?: readonly ErrorCode[];
  /** A smaller body limit than the daemon's, for routes whose bodies are always small. */
  readonly maxBodyBytes?: number;
  /** Any content type: the handler reads the raw bytes itself (inbound webhooks). */
  readonly readsOwnBody?: true;
  /** The answer sets (or, on logout, clears) the session cookie. */
  readonly session?: 'sets' | 'clears';
  /** A live stream that a client resumes with `Last-Event-ID`. */
  readonly resumable?: true;
  /**
   * The scope a personal API token needs for this route (a user, member or
   * ADMIN route; public ones need none). Without one, only a session may call
   * it (logging out, changing the password, downloading a backup).
   */
  readonly scope?: RequiredScope;
  /**
   * An extension's installation token may call it too: within the workspace
   * it was installed in, publishing only its manifest's event keys, reading
   * only its own subscriptions' deliveries.
   */
  readonly forInstallations?: true;
}

/** A login or password change is well under 1 KiB: nobody needs the daemon's 1 MiB to send one, anonymously least of all. */
const AUTH_MAX_BODY_BYTES = 8 * 1024;

const STREAM = {
  contentType: 'text/event-stream',
  description:
    'Server-sent events of the activity feed (`id`, `event`, `data` per item). An event whose payload is over 16 KiB of JSON comes without `payload` and with `payloadBytes`.',
} as const;

export const endpoints = {
  // Operations.
  getHealth: { method: 'GET', path: '/api/health', summary: 'Check that the daemon answers', tag: 'operations', access: 'public', data: Health },
  getReadiness: {
    method: 'GET',
    path: '/api/health/ready',
    summary: 'Check that the daemon can serve: storage writable, dispatcher running',
    tag: 'operations',
    access: 'public',
    data: Readiness,
  },
  getOpenApi: {
    method: 'GET',
    path: '/api/openapi.json',
    summary: 'Get this OpenAPI document',
    tag: 'operations',
    access: 'public',
    answers: { contentType: 'application/json', description: 'This OpenAPI 3.1 document, not wrapped in the envelope.' },
  },
  getMetrics: {
    method: 'GET',
    path: '/metrics',
    summary: 'Scrape the Prometheus metrics',
    tag: 'operations',
    access: 'scraper',
    scope: 'deliveries:read',
    answers: { contentType: 'text/plain; version=0.0.4', description: 'The Prometheus text format.' },
  },
  getDaemonStatus: { method: 'GET', path: '/api/admin/status', summary: 'Get the daemon’s version, uptime and backlog', tag: 'operations', access: 'admin', scope: 'deliveries:read', data: DaemonStatus },
  downloadBackup: {
    method: 'GET',
    path: '/api/admin/backup',
    summary: 'Download a consistent snapshot of the data directory',
    tag: 'operations',
    access: 'admin',
    query: request.BackupQuery,
    answers: { contentType: 'application/gzip', description: 'A tar.gz archive of the data directory.' },
  },

  // Authentication.
  createSession: {
    method: 'POST',
    path: '/api/auth/login',
    summary: 'Log in with e-mail and password; the session comes as a cookie',
    tag: 'auth',
    access: 'public',
    body: request.LoginBody,
    data: User,
    errors: ['INVALID_CREDENTIALS', 'ACCOUNT_DISABLED', 'RATE_LIMITED'],
    maxBodyBytes: AUTH_MAX_BODY_BYTES,
    session: 'sets',
  },
  getSession: {
    method: 'GET',
    path: '/api/auth/session',
    summary: 'Get the signed-in user, or null: never a 401',
    tag: 'auth',
    access: 'public',
    data: v.nullable(User),
  },
  getCurrentUser: { method: 'GET', path: '/api/auth/me', summary: 'Get the caller’s account', tag: 'auth', access: 'user', scope: 'any', data: User },
  changePassword: {
    method: 'PUT',
    path: '/api/auth/me/password',
    summary: 'Change the caller’s password; other sessions end',
    tag: 'auth',
    access: 'user',
    body: request.ChangePasswordBody,
    errors: ['INVALID_CREDENTIALS', 'RATE_LIMITED'],
    maxBodyBytes: AUTH_MAX_BODY_BYTES,
    session: 'sets',
  },
  endSession: { method: 'POST', path: '/api/auth/logout', summary: 'End the caller’s session', tag: 'auth', access: 'user', session: 'clears' },

  createApiToken: {
    method: 'POST',
    path: '/api/auth/tokens',
    summary: 'Create a personal API token; the token is shown this once',
    tag: 'auth',
    access: 'user',
    scope: 'tokens:write',
    body: request.CreateTokenBody,
    status: 201,
    data: CreatedApiToken,
    errors: ['CONFLICT'],
  },
  listApiTokens: {
    method: 'GET',
    path: '/api/auth/tokens',
    summary: 'List your personal API tokens',
    tag: 'auth',
    access: 'user',
    scope: 'tokens:write',
    data: v.array(ApiToken),
  },
  revokeApiToken: {
    method: 'DELETE',
    path: '/api/auth/tokens/:tokenId',
    summary: 'Revoke one of your personal API tokens',
    tag: 'auth',
    access: 'user',
    scope: 'tokens:write',
    params: request.TokenParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },
  listAllApiTokens: {
    method: 'GET',
    path: '/api/admin/tokens',
    summary: 'List every user’s personal API tokens',
    tag: 'auth',
    access: 'admin',
    scope: 'tokens:write',
    data: v.array(ApiToken),
  },
  revokeAnyApiToken: {
    method: 'DELETE',
    path: '/api/admin/tokens/:tokenId',
    summary: 'Revoke any user’s personal API token',
    tag: 'auth',
    access: 'admin',
    scope: 'tokens:write',
    params: request.TokenParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },

  // Users.
  createUser: {
    method: 'POST',
    path: '/api/admin/users',
    summary: 'Create a user account',
    tag: 'users',
    access: 'admin',
    scope: 'users:write',
    body: request.CreateUserBody,
    status: 201,
    data: User,
    errors: ['CONFLICT'],
  },
  listUsers: { method: 'GET', path: '/api/admin/users', summary: 'List the user accounts', tag: 'users', access: 'admin', scope: 'users:write', data: v.array(User) },
  updateUser: {
    method: 'PATCH',
    path: '/api/admin/users/:id',
    summary: 'Rename, change the roles of, disable or enable a user',
    tag: 'users',
    access: 'admin',
    scope: 'users:write',
    params: request.UserParams,
    body: request.PatchUserBody,
    data: User,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  deleteUser: {
    method: 'DELETE',
    path: '/api/admin/users/:id',
    summary: 'Delete a user account',
    tag: 'users',
    access: 'admin',
    scope: 'users:write',
    params: request.UserParams,
    status: 204,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  resetPassword: {
    method: 'POST',
    path: '/api/admin/users/:id/password',
    summary: 'Set a user’s password; their sessions end',
    tag: 'users',
    access: 'admin',
    scope: 'users:write',
    params: request.UserParams,
    body: request.ResetPasswordBody,
    data: User,
    errors: ['NOT_FOUND'],
  },

  // The marketplace.
  listExtensions: {
    method: 'GET',
    path: '/api/marketplace/extensions',
    summary: 'Browse the catalog, by search text and category',
    tag: 'marketplace',
    access: 'public',
    query: request.BrowseQuery,
    data: v.array(ExtensionSummary),
    meta: PageMeta,
  },
  getExtension: {
    method: 'GET',
    path: '/api/marketplace/extensions/:key',
    summary: 'Get an extension with its versions',
    tag: 'marketplace',
    access: 'public',
    params: request.ExtensionParams,
    query: request.ExtensionQuery,
    data: ExtensionDetail,
    errors: ['NOT_FOUND'],
  },
  getVersion: {
    method: 'GET',
    path: '/api/marketplace/extensions/:key/versions/:version',
    summary: 'Get the full record of one version',
    tag: 'marketplace',
    access: 'public',
    params: request.VersionParams,
    data: VersionRecord,
    errors: ['NOT_FOUND'],
  },
  getManifestSchema: {
    method: 'GET',
    path: '/api/schemas/extension-manifest.json',
    summary: 'Get the JSON Schema of extension manifests',
    tag: 'marketplace',
    access: 'public',
    answers: { contentType: 'application/schema+json', description: 'The JSON Schema (2020-12) a version’s manifest must pass.' },
  },
  listEventTypes: {
    method: 'GET',
    path: '/api/event-types',
    summary: 'List the event types and their schema versions',
    tag: 'event-types',
    access: 'public',
    data: v.array(EventType),
  },
  getEventType: {
    method: 'GET',
    path: '/api/event-types/:eventKey',
    summary: 'Get an event type with the JSON Schema of each schema version',
    tag: 'event-types',
    access: 'public',
    params: request.EventTypeParams,
    data: EventTypeDetail,
    errors: ['NOT_FOUND'],
  },
  listCategories: {
    method: 'GET',
    path: '/api/marketplace/categories',
    summary: 'List the categories with their number of extensions',
    tag: 'marketplace',
    access: 'public',
    data: v.array(CategoryCount),
  },
  createExtension: {
    method: 'POST',
    path: '/api/admin/marketplace/extensions',
    summary: 'Add an extension to the catalog',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    body: request.CreateExtensionBody,
    status: 201,
    data: ExtensionDetail,
    errors: ['CONFLICT'],
  },
  updateExtension: {
    method: 'PUT',
    path: '/api/admin/marketplace/extensions/:key',
    summary: 'Change an extension’s name, description, category or permissions',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.ExtensionParams,
    body: request.UpdateExtensionBody,
    data: ExtensionDetail,
    errors: ['NOT_FOUND'],
  },
  publishVersion: {
    method: 'POST',
    path: '/api/admin/marketplace/extensions/:key/versions',
    summary: 'Publish a version of an extension',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.ExtensionParams,
    body: request.PublishVersionBody,
    status: 201,
    data: VersionRecord,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  yankVersion: {
    method: 'DELETE',
    path: '/api/admin/marketplace/extensions/:key/versions/:version',
    summary: 'Yank a version: no new installs, existing ones keep it',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.VersionParams,
    query: request.YankQuery,
    status: 204,
    errors: ['NOT_FOUND'],
  },
  unyankVersion: {
    method: 'PUT',
    path: '/api/admin/marketplace/extensions/:key/versions/:version/unyank',
    summary: 'Make a yanked version installable again',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.VersionParams,
    data: VersionRecord,
    errors: ['NOT_FOUND'],
  },
  listAuditRecords: {
    method: 'GET',
    path: '/api/admin/audit',
    summary: 'Read the catalog’s audit trail, newest first',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    query: request.AuditQuery,
    data: v.array(AuditRecord),
    meta: OffsetMeta,
    errors: ['NOT_FOUND'],
  },
  getExtensionConfig: {
    method: 'GET',
    path: '/api/admin/marketplace/extensions/:key/config',
    summary: 'Get an extension’s configuration, secrets masked',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.ExtensionParams,
    data: ExtensionConfig,
    errors: ['NOT_FOUND'],
  },
  updateExtensionConfig: {
    method: 'PUT',
    path: '/api/admin/marketplace/extensions/:key/config',
    summary: 'Set fields of an extension’s configuration',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.ExtensionParams,
    body: request.ConfigBody,
    data: ExtensionConfig,
    errors: ['NOT_FOUND'],
  },
  deleteConfigField: {
    method: 'DELETE',
    path: '/api/admin/marketplace/extensions/:key/config/:field',
    summary: 'Remove a field from an extension’s configuration',
    tag: 'marketplace',
    access: 'admin',
    scope: 'catalog:write',
    params: request.ConfigFieldParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },

  // Workspaces.
  createWorkspace: {
    method: 'POST',
    path: '/api/admin/workspaces',
    summary: 'Create a workspace',
    tag: 'workspaces',
    access: 'admin',
    scope: 'workspaces:write',
    body: request.CreateWorkspaceBody,
    status: 201,
    data: Workspace,
    errors: ['CONFLICT'],
  },
  listWorkspaces: {
    method: 'GET',
    path: '/api/workspaces',
    summary: 'List the workspaces the caller may see',
    tag: 'workspaces',
    access: 'user',
    scope: 'events:read',
    data: v.array(Workspace),
  },
  getWorkspace: {
    method: 'GET',
    path: '/api/workspaces/:id',
    summary: 'Get a workspace',
    tag: 'workspaces',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    data: Workspace,
    errors: ['NOT_FOUND'],
  },
  listMembers: {
    method: 'GET',
    path: '/api/workspaces/:id/members',
    summary: 'List a workspace’s members with their names',
    tag: 'workspaces',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    data: v.array(WorkspaceMember),
    errors: ['NOT_FOUND'],
  },
  renameWorkspace: {
    method: 'PATCH',
    path: '/api/admin/workspaces/:id',
    summary: 'Rename a workspace',
    tag: 'workspaces',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.WorkspaceParams,
    body: request.RenameWorkspaceBody,
    data: Workspace,
    errors: ['NOT_FOUND'],
  },
  deleteWorkspace: {
    method: 'DELETE',
    path: '/api/admin/workspaces/:id',
    summary: 'Delete a workspace with everything in it',
    tag: 'workspaces',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.WorkspaceParams,
    query: request.DeleteWorkspaceQuery,
    data: DeletedWorkspace,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  addMember: {
    method: 'PUT',
    path: '/api/admin/workspaces/:id/members/:userId',
    summary: 'Make a user a member of a workspace',
    tag: 'workspaces',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.MemberParams,
    data: Workspace,
    errors: ['NOT_FOUND'],
  },
  removeMember: {
    method: 'DELETE',
    path: '/api/admin/workspaces/:id/members/:userId',
    summary: 'Remove a member from a workspace',
    tag: 'workspaces',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.MemberParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },

  // Installations.
  installExtension: {
    method: 'POST',
    path: '/api/workspaces/:id/extensions',
    summary: 'Install an extension in a workspace',
    tag: 'installations',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.WorkspaceParams,
    body: request.InstallBody,
    status: 201,
    data: InstalledExtension,
    errors: ['NOT_FOUND', 'CONFLICT', 'VERSION_YANKED', 'INCOMPATIBLE_VERSION', 'CONSENT_REQUIRED'],
  },
  listInstallations: {
    method: 'GET',
    path: '/api/workspaces/:id/extensions',
    summary: 'List the extensions installed in a workspace',
    tag: 'installations',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    data: v.array(Installation),
    errors: ['NOT_FOUND'],
  },
  updateInstallation: {
    method: 'PATCH',
    path: '/api/workspaces/:id/extensions/:key',
    summary: 'Enable, disable, upgrade or downgrade an installation',
    tag: 'installations',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.InstallationParams,
    body: request.UpdateInstallationBody,
    data: InstalledExtension,
    errors: ['NOT_FOUND', 'CONFLICT', 'VERSION_YANKED', 'INCOMPATIBLE_VERSION', 'CONSENT_REQUIRED'],
  },
  uninstallExtension: {
    method: 'DELETE',
    path: '/api/workspaces/:id/extensions/:key',
    summary: 'Uninstall an extension from a workspace',
    tag: 'installations',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.InstallationParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },

  rotateInstallationToken: {
    method: 'POST',
    path: '/api/workspaces/:id/extensions/:key/rotate-token',
    summary: 'Issue a new installation token; the old one stops working',
    tag: 'installations',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.InstallationParams,
    data: RotatedInstallationToken,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  getOwnInstallation: {
    method: 'GET',
    path: '/api/extension/installation',
    summary: 'Read the calling extension’s installation and configuration',
    tag: 'extension',
    access: 'installation',
    data: OwnInstallation,
  },

  // Subscriptions.
  createSubscription: {
    method: 'POST',
    path: '/api/workspaces/:id/subscriptions',
    summary: 'Subscribe an extension to an event key; the signing secret is shown this once',
    tag: 'subscriptions',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.WorkspaceParams,
    body: request.SubscribeBody,
    status: 201,
    data: CreatedSubscription,
    meta: v.nullable(WarningsMeta),
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  listSubscriptions: {
    method: 'GET',
    path: '/api/workspaces/:id/subscriptions',
    summary: 'List a workspace’s subscriptions',
    tag: 'subscriptions',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    data: v.array(Subscription),
    errors: ['NOT_FOUND'],
  },
  updateSubscription: {
    method: 'PATCH',
    path: '/api/workspaces/:id/subscriptions/:subscriptionId',
    summary: 'Enable, disable or move a subscription',
    tag: 'subscriptions',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.SubscriptionParams,
    body: request.ChangeSubscriptionBody,
    data: Subscription,
    errors: ['NOT_FOUND'],
  },
  deleteSubscription: {
    method: 'DELETE',
    path: '/api/workspaces/:id/subscriptions/:subscriptionId',
    summary: 'Delete a subscription',
    tag: 'subscriptions',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.SubscriptionParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },
  rotateSigningSecret: {
    method: 'POST',
    path: '/api/workspaces/:id/subscriptions/:subscriptionId/rotate-secret',
    summary: 'Rotate a subscription’s signing secret; the old one signs too for a while',
    tag: 'subscriptions',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.SubscriptionParams,
    data: RotatedSecret,
    errors: ['NOT_FOUND'],
  },
  testSubscription: {
    method: 'POST',
    path: '/api/workspaces/:id/subscriptions/:subscriptionId/test',
    summary: 'Send a test event to one subscription',
    tag: 'subscriptions',
    access: 'admin',
    scope: 'workspaces:write',
    params: request.SubscriptionParams,
    body: request.TestSubscriptionBody,
    status: 202,
    data: TestDelivery,
    errors: ['NOT_FOUND'],
  },

  // Events and deliveries.
  publishEvent: {
    method: 'POST',
    path: '/api/workspaces/:id/events/publish',
    summary: 'Publish an event into a workspace',
    tag: 'events',
    access: 'member',
    forInstallations: true,
    scope: 'events:publish',
    params: request.WorkspaceParams,
    body: request.PublishEventBody,
    headers: request.PublishEventHeaders,
    meta: PublishedMeta,
    // CONFLICT: a platform.notification for a new chat channel when the workspace has as many as it keeps;
    // or the first request with the same Idempotency-Key still unfinished after the wait.
    errors: ['NOT_FOUND', 'CONFLICT', 'IDEMPOTENCY_KEY_REUSED'],
  },
  listEvents: {
    method: 'GET',
    path: '/api/workspaces/:id/events',
    summary: 'List a workspace’s events, newest first',
    tag: 'events',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    query: request.EventsQuery,
    data: v.array(ListedEvent),
    meta: CursorMeta,
    errors: ['NOT_FOUND'],
  },
  getEvent: {
    method: 'GET',
    path: '/api/workspaces/:id/events/:eventId',
    summary: 'Get an event with the record of each of its deliveries',
    tag: 'events',
    access: 'member',
    scope: 'events:read',
    params: request.EventParams,
    data: EventWithDeliveries,
    errors: ['NOT_FOUND'],
  },
  listDeliveries: {
    method: 'GET',
    path: '/api/workspaces/:id/deliveries',
    summary: 'List a workspace’s delivery records, newest first',
    tag: 'events',
    access: 'member',
    forInstallations: true,
    scope: 'deliveries:read',
    params: request.WorkspaceParams,
    query: request.DeliveriesQuery,
    data: v.array(DeliveryRecord),
    meta: CursorMeta,
    errors: ['NOT_FOUND'],
  },
  getDelivery: {
    method: 'GET',
    path: '/api/workspaces/:id/deliveries/:deliveryId',
    summary: 'Read one delivery record',
    tag: 'events',
    access: 'member',
    scope: 'deliveries:read',
    params: request.DeliveryParams,
    data: DeliveryRecord,
    errors: ['NOT_FOUND'],
  },
  redeliverDelivery: {
    method: 'POST',
    path: '/api/workspaces/:id/deliveries/:deliveryId/redeliver',
    summary: 'Send a delivery again, as a new delivery of the same event to the same subscriber',
    tag: 'events',
    access: 'admin',
    scope: 'dead-letters:write',
    params: request.DeliveryParams,
    status: 202,
    data: Redelivery,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  streamWorkspace: {
    method: 'GET',
    path: '/api/workspaces/:id/stream',
    summary: 'Follow a workspace’s events and deliveries live',
    tag: 'events',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    answers: STREAM,
    errors: ['NOT_FOUND', 'RATE_LIMITED'],
    resumable: true,
  },
  streamAllWorkspaces: {
    method: 'GET',
    path: '/api/admin/stream',
    summary: 'Follow every workspace’s events and deliveries live',
    tag: 'events',
    access: 'admin',
    scope: 'events:read',
    answers: STREAM,
    errors: ['RATE_LIMITED'],
    resumable: true,
  },

  // Chat.
  listChatChannels: {
    method: 'GET',
    path: '/api/workspaces/:id/chat/channels',
    summary: 'List a workspace’s chat channels',
    tag: 'chat',
    access: 'member',
    scope: 'events:read',
    params: request.WorkspaceParams,
    data: v.array(ChannelSummary),
    errors: ['NOT_FOUND'],
  },
  listChatMessages: {
    method: 'GET',
    path: '/api/workspaces/:id/chat/channels/:channel/messages',
    summary: 'Read a chat channel, newest first',
    tag: 'chat',
    access: 'member',
    scope: 'events:read',
    params: request.ChannelParams,
    query: request.MessagesQuery,
    data: v.array(ChatMessage),
    meta: CursorMeta,
    errors: ['NOT_FOUND'],
  },

  // Dead letters.
  listDeadLetters: {
    method: 'GET',
    path: '/api/admin/dead-letters',
    summary: 'List dead letters, by workspace, event key and extension',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'deliveries:read',
    query: request.DeadLettersQuery,
    data: v.array(DeadLetter),
    meta: PageMeta,
    errors: ['NOT_FOUND'],
  },
  replayDeadLetters: {
    method: 'POST',
    path: '/api/admin/dead-letters/replay',
    summary: 'Replay the dead letters that match a filter',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'dead-letters:write',
    body: request.ReplayMatchingBody,
    status: 202,
    data: ReplayedDeadLetters,
    errors: ['NOT_FOUND'],
  },
  discardDeadLetters: {
    method: 'POST',
    path: '/api/admin/dead-letters/discard',
    summary: 'Discard the dead letters that match a filter',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'dead-letters:write',
    body: request.DiscardMatchingBody,
    data: DiscardedDeadLetters,
    errors: ['NOT_FOUND'],
  },
  getDeadLetter: {
    method: 'GET',
    path: '/api/admin/dead-letters/:id',
    summary: 'Get a dead letter with its event',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'deliveries:read',
    params: request.DeadLetterParams,
    data: DeadLetter,
    errors: ['NOT_FOUND'],
  },
  getDeadLetterState: {
    method: 'GET',
    path: '/api/admin/dead-letters/:id/state',
    summary: 'Follow a dead letter’s replay: dead, queued or gone',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'deliveries:read',
    params: request.DeadLetterParams,
    data: DeadLetterState,
  },
  replayDeadLetter: {
    method: 'POST',
    path: '/api/admin/dead-letters/:id/replay',
    summary: 'Replay one dead letter',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'dead-letters:write',
    params: request.DeadLetterParams,
    status: 202,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  discardDeadLetter: {
    method: 'DELETE',
    path: '/api/admin/dead-letters/:id',
    summary: 'Discard one dead letter',
    tag: 'dead-letters',
    access: 'admin',
    scope: 'dead-letters:write',
    params: request.DeadLetterParams,
    status: 204,
    errors: ['NOT_FOUND'],
  },

  // Inbound webhooks.
  receiveWebhook: {
    method: 'POST',
    path: '/api/webhooks/:extensionKey',
    summary: 'Receive an outside service’s webhook for an extension',
    tag: 'webhooks',
    access: 'public',
    params: request.WebhookParams,
    readsOwnBody: true,
    // A verifier that publishes answers the event's id (or that it is a duplicate); a plugin's handler answers what it returns.
    data: v.unknown(),
    meta: v.nullable(v.union([PublishedMeta, v.strictObject({ duplicate: v.literal(true) })])),
    errors: ['NOT_FOUND', 'VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'WEBHOOK_REJECTED', 'WEBHOOK_FAILED'],
  },
  listWebhookRequests: {
    method: 'GET',
    path: '/api/admin/webhooks/:extensionKey/requests',
    summary: 'Read an extension’s inbound webhook requests, newest first',
    tag: 'webhooks',
    access: 'admin',
    scope: 'deliveries:read',
    params: request.WebhookParams,
    query: request.WebhookRequestsQuery,
    data: v.array(WebhookRequestEntry),
    meta: CursorMeta,
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
} as const satisfies Record<string, EndpointDeclaration>;

export type Endpoints = typeof endpoints;
export type OperationId = keyof Endpoints;

/**
 * Every code a route can answer with: its own (`errors`), and those that its
 * access and inputs imply. 500 and 503 can follow any request.
 */
export function errorCodesOf(declaration: EndpointDeclaration): ErrorCode[] {
  const codes: ErrorCode[] = [...(declaration.errors ?? []), 'MISDIRECTED_REQUEST', 'INTERNAL_ERROR', 'UNAVAILABLE'];
  const { access, method } = declaration;
  if (access === 'user' || access === 'member' || access === 'admin') codes.push('UNAUTHORIZED', 'ACCOUNT_DISABLED');
  if (access === 'scraper' || access === 'installation') codes.push('UNAUTHORIZED');
  // Not a member or not an ADMIN; an API token without the route's scope, or limited to other workspaces; a route only sessions may call.
  if (access === 'user' || access === 'member' || access === 'admin') codes.push('FORBIDDEN');
  // A write sent with the session cookie from another site is refused (the webhook endpoint takes no cookie).
  if (method !== 'GET' && !declaration.readsOwnBody) codes.push('FORBIDDEN');
  if (declaration.params || declaration.query || declaration.body || declaration.headers) codes.push('VALIDATION_ERROR');
  if (declaration.body) codes.push('INVALID_JSON', 'PAYLOAD_TOO_LARGE');
  if (!declaration.readsOwnBody) codes.push('UNSUPPORTED_MEDIA_TYPE');
  return [...new Set(codes)].sort();
}
