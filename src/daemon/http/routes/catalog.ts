import {
  AuditQuery,
  BrowseQuery,
  MAX_AUDIT_OFFSET,
  MAX_BROWSE_OFFSET,
  CreateExtensionBody,
  ExtensionParams,
  PublishVersionBody,
  UpdateExtensionBody,
  VersionParams,
  YankQuery,
} from '../../catalog/schemas.js';
import type { AuditRecord, ExtensionSummary } from '../../catalog/types.js';
import type { RouteModule } from '../context.js';
import { offsetMeta, startOffset } from '../cursor.js';
import { PageReply } from '../endpoint.js';
import { toJson } from '../envelope.js';
import { PageBudget } from '../../paging.js';

const BROWSE = '/api/marketplace/extensions';
const ADMIN = '/api/admin/marketplace/extensions';

/** The marketplace: public browse, ADMIN changes, and the ADMIN audit trail. */
export const catalogRoutes: RouteModule = (routes, { endpoint, services: { catalog }, config: { maxPageBytes } }) => {
  routes.get(
    BROWSE,
    endpoint({
      access: 'public',
      query: BrowseQuery,
      handle: ({ query: { cursor, ...query } }) => {
        const offset = startOffset(cursor, query.offset, 'extensions', '', MAX_BROWSE_OFFSET);
        const page = catalog.browse({ ...query, offset });
        const budget = new PageBudget<ExtensionSummary>(maxPageBytes, toJson);
        for (const item of page.items) if (!budget.admit(item)) break;
        const more = offset + budget.count < page.total;
        return new PageReply(budget, { total: page.total, limit: query.limit, offset, ...offsetMeta('extensions', '', offset, budget.count, more) });
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
    endpoint({
      access: 'admin',
      query: AuditQuery,
      handle: async ({ query: { cursor, limit, ...query } }) => {
        const scope = query.extensionKey ?? '';
        const offset = startOffset(cursor, query.offset, 'audit', scope, MAX_AUDIT_OFFSET);
        // One record beyond the limit tells whether more follow.
        const records = await catalog.auditTrail({ ...query, offset, limit: limit + 1 });
        const budget = new PageBudget<AuditRecord>(maxPageBytes);
        for (const record of records.slice(0, limit)) if (!budget.admit(record)) break;
        const more = budget.count < records.length;
        return new PageReply(budget, { limit, offset, ...offsetMeta('audit', scope, offset, budget.count, more) });
      },
    }),
  );
};
