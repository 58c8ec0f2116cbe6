import * as v from 'valibot';
import {
  BrowseQuery,
  CreateExtensionBody,
  extensionFields,
  ManifestBody,
  PublishVersionBody,
  UpdateExtensionBody,
  versionFields,
} from '../../contract/requests.js';
import { jsonObject } from '../../contract/schemas.js';

export const DEFAULT_CATEGORY = 'other';

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
          manifest: v.optional(ManifestBody),
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
