import {
  AuditQuery,
  BrowseQuery,
  CreateExtensionBody,
  ExtensionParams,
  PublishVersionBody,
  UpdateExtensionBody,
  VersionParams,
  YankQuery,
} from '../../catalog/schemas.js';
import type { RouteModule } from '../context.js';
import { Reply } from '../endpoint.js';

const BROWSE = '/api/marketplace/extensions';
const ADMIN = '/api/admin/marketplace/extensions';

/** The marketplace: public browse, ADMIN changes, and the ADMIN audit trail. */
export const catalogRoutes: RouteModule = (routes, { endpoint, services: { catalog } }) => {
  routes.get(
    BROWSE,
    endpoint({
      access: 'public',
      query: BrowseQuery,
      handle: ({ query }) => {
        const page = catalog.browse(query);
        return new Reply(page.items, { total: page.total, limit: query.limit, offset: query.offset });
      },
    }),
  );
  routes.get(
    `${BROWSE}/:key`,
    endpoint({ access: 'public', params: ExtensionParams, handle: ({ params }) => catalog.detail(params.key) }),
  );
  routes.get(
    `${BROWSE}/:key/versions/:version`,
    endpoint({
      access: 'public',
      params: VersionParams,
      handle: ({ params }) => catalog.versionRecord(params.key, params.version),
    }),
  );
  routes.get('/api/marketplace/categories', endpoint({ access: 'public', handle: () => catalog.categories() }));

  routes.post(
    ADMIN,
    endpoint({
      access: 'admin',
      body: CreateExtensionBody,
      status: 201,
      handle: ({ caller, body }) => catalog.create(caller.user, body),
    }),
  );
  routes.put(
    `${ADMIN}/:key`,
    endpoint({
      access: 'admin',
      params: ExtensionParams,
      body: UpdateExtensionBody,
      handle: ({ caller, params, body }) => catalog.update(caller.user, params.key, body),
    }),
  );
  routes.post(
    `${ADMIN}/:key/versions`,
    endpoint({
      access: 'admin',
      params: ExtensionParams,
      body: PublishVersionBody,
      status: 201,
      handle: ({ caller, params, body }) => catalog.publishVersion(caller.user, params.key, body),
    }),
  );
  routes.delete(
    `${ADMIN}/:key/versions/:version`,
    endpoint({
      access: 'admin',
      params: VersionParams,
      query: YankQuery,
      status: 204,
      handle: ({ caller, params, query }) => catalog.yank(caller.user, params.key, params.version, query.reason),
    }),
  );
  routes.put(
    `${ADMIN}/:key/versions/:version/unyank`,
    endpoint({
      access: 'admin',
      params: VersionParams,
      handle: ({ caller, params }) => catalog.unyank(caller.user, params.key, params.version),
    }),
  );

  routes.get(
    '/api/admin/audit',
    endpoint({ access: 'admin', query: AuditQuery, handle: ({ query }) => catalog.auditTrail(query) }),
  );
};
