import * as v from 'valibot';
import { CursorParam, jsonObject, NonEmptyString, QueryInt, Slug } from '../../contract/schemas.js';
import { isStrictSemver } from './versions.js';

export const ExtensionKey = Slug;

export const SemVer = v.pipe(
  v.string(),
  v.maxLength(256, 'must be at most 256 characters'),
  v.check(isStrictSemver, 'must be a semantic version (SemVer 2.0.0) such as 1.4.0 or 2.0.0-beta.1, without a leading v'),
);

function isHttpUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

const HttpUrl = v.pipe(
  v.string(),
  v.maxLength(2048, 'must be at most 2048 characters'),
  v.check(isHttpUrl, 'must be an http:// or https:// URL'),
);

const Name = NonEmptyString(100);
const Description = v.pipe(v.string(), v.trim(), v.maxLength(2000, 'must be at most 2000 characters'));
/** Categories are tags: compared case-insensitively, so stored in lower case. */
const Category = v.pipe(NonEmptyString(64), v.toLowerCase());
/** Shape only; that each name starts with the extension's own key is a catalog rule (see permissions.ts). */
const Permissions = v.pipe(
  v.array(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'))),
  v.maxLength(100, 'must list at most 100 permissions'),
  v.transform((names) => [...new Set(names)]),
);

export const DEFAULT_CATEGORY = 'other';

const extensionFields = {
  extensionKey: ExtensionKey,
  name: Name,
  description: v.optional(Description),
  category: v.optional(Category),
  permissions: v.optional(Permissions),
};

/** PublishExtensionRequest, plus the permissions the detail shows. */
export const CreateExtensionBody = jsonObject(extensionFields);

const UPDATABLE = ['name', 'description', 'category', 'permissions'] as const;

/** `extensionKey` may be repeated from the path (clients that send the whole resource back), never changed. */
export const UpdateExtensionBody = v.pipe(
  jsonObject({
    extensionKey: v.optional(v.string()),
    name: v.optional(Name),
    description: v.optional(Description),
    category: v.optional(Category),
    permissions: v.optional(Permissions),
  }),
  v.check((body) => UPDATABLE.some((field) => body[field] !== undefined), `must change at least one of ${UPDATABLE.join(', ')}`),
);

/** Optional fields accept null as "absent", so a client may send a version record back as it got it. */
const versionFields = {
  version: SemVer,
  artifactUrl: HttpUrl,
  manifestUrl: v.nullish(HttpUrl),
  requiresPlatform: v.nullish(SemVer),
  requiresSdk: v.nullish(SemVer),
  changelog: v.nullish(v.pipe(v.string(), v.maxLength(20_000, 'must be at most 20000 characters'))),
};

export const PublishVersionBody = jsonObject(versionFields);

export const ExtensionParams = v.object({ key: ExtensionKey });
export const VersionParams = v.object({ key: ExtensionKey, version: SemVer });

/** Empty parameters (`?category=`) mean "no filter". Unknown parameters are ignored (cache busters). */
const optionalText = (max: number) =>
  v.optional(
    v.pipe(
      v.string(),
      v.maxLength(max, `must be at most ${max} characters`),
      v.transform((text) => text.trim() || undefined),
    ),
  );

const MAX_PAGE = 500;

export const MAX_BROWSE_OFFSET = 999_999_999;
export const BrowseQuery = v.object({
  search: optionalText(200),
  category: optionalText(64),
  limit: v.optional(QueryInt(1, MAX_PAGE), '50'),
  offset: v.optional(QueryInt(0, MAX_BROWSE_OFFSET), '0'),
  cursor: CursorParam,
});

export const MAX_AUDIT_PAGE = 1000;
export const MAX_AUDIT_OFFSET = 100_000;

export const AuditQuery = v.object({
  extensionKey: v.optional(ExtensionKey),
  limit: v.optional(QueryInt(1, MAX_AUDIT_PAGE), '50'),
  /** Bounded: a read past the in-memory window keeps up to twice offset + limit records while it scans. */
  offset: v.optional(QueryInt(0, MAX_AUDIT_OFFSET), '0'),
  cursor: CursorParam,
});

export const YankQuery = v.object({ reason: optionalText(500) });

/**
 * seed/catalog.json: extensions with their versions. A version may carry
 * its historical release date and be yanked, as a real catalog's would.
 */
export const SeedFile = jsonObject({
  extensions: v.array(
    jsonObject({
      ...extensionFields,
      versions: v.array(
        jsonObject({
          ...versionFields,
          releaseDate: v.optional(v.pipe(v.string(), v.isoDate('must be a date YYYY-MM-DD'))),
          yanked: v.optional(v.boolean()),
          yankReason: v.optional(v.pipe(v.string(), v.maxLength(500))),
        }),
      ),
    }),
  ),
});

export type CreateExtensionInput = v.InferOutput<typeof CreateExtensionBody>;
export type UpdateExtensionInput = v.InferOutput<typeof UpdateExtensionBody>;
export type PublishVersionInput = v.InferOutput<typeof PublishVersionBody>;
export type BrowseInput = v.InferOutput<typeof BrowseQuery>;
export type SeedInput = v.InferOutput<typeof SeedFile>;
