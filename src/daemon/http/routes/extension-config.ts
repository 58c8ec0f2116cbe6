import * as v from 'valibot';
import { FIELD_TYPES } from '../../extension-config/service.js';
import { jsonObject, Slug } from '../../../contract/schemas.js';
import type { RouteModule } from '../context.js';

const ConfigParams = v.object({ key: Slug });
const FieldName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z][A-Za-z0-9_.-]{0,127}$/, 'must start with a letter, then letters, digits, _, . or - (at most 128)'),
);
const FieldParams = v.object({ key: Slug, field: FieldName });
const ConfigBody = jsonObject({
  fields: v.pipe(
    v.array(
      jsonObject({
        name: FieldName,
        type: v.picklist(FIELD_TYPES, 'must be STRING, NUMBER, BOOLEAN or SECRET'),
        value: v.union([v.pipe(v.string(), v.maxLength(65_536)), v.number(), v.boolean(), v.null()], 'must be a string, number, boolean or null'),
      }),
    ),
    v.minLength(1, 'must name at least one field'),
    v.maxLength(200, 'at most 200 fields at once'),
  ),
});

export const extensionConfigRoutes: RouteModule = (routes, { endpoint, services: { extensionConfig } }) => {
  routes.get(
    '/api/admin/marketplace/extensions/:key/config',
    endpoint({ access: 'admin', params: ConfigParams, handle: ({ params }) => extensionConfig.view(params.key) }),
  );
  routes.put(
    '/api/admin/marketplace/extensions/:key/config',
    endpoint({
      access: 'admin',
      params: ConfigParams,
      body: ConfigBody,
      handle: ({ params, body }) => extensionConfig.update(params.key, body.fields),
    }),
  );
  routes.delete(
    '/api/admin/marketplace/extensions/:key/config/:field',
    endpoint({
      access: 'admin',
      params: FieldParams,
      status: 204,
      handle: ({ params }) => extensionConfig.remove(params.key, params.field),
    }),
  );
};
