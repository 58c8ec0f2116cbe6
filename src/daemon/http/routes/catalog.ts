import { MAX_AUDIT_OFFSET, MAX_BROWSE_OFFSET } from '../../../contract/requests.js';
import type { AuditRecord, ExtensionSummary } from '../../catalog/types.js';
import type { HttpContext } from '../context.js';
import { offsetMeta, startOffset } from '../cursor.js';
import { PageReply, type Handlers } from '../endpoint.js';
import { toJson } from '../envelope.js';
import { PageBudget } from '../../paging.js';

/** The marketplace: public browse, ADMIN changes, and the ADMIN audit trail. */
export const catalogRoutes = ({ services: { catalog }, config: { maxPageBytes } }: HttpContext) =>
  ({
    listExtensions: ({ query: { cursor, ...query } }) => {
      const offset = startOffset(cursor, query.offset, 'extensions', '', MAX_BROWSE_OFFSET);
      const page = catalog.browse({ ...query, offset });
      const budget = new PageBudget<ExtensionSummary>(maxPageBytes, toJson);
      for (const item of page.items) if (!budget.admit(item)) break;
      const more = offset + budget.count < page.total;
      return new PageReply(budget, { total: page.total, limit: query.limit, offset, ...offsetMeta('extensions', '', offset, budget.count, more) });
    },
    getExtension: ({ params, query }) =>
      query.platformVersion === undefined && query.sdkVersion === undefined ? catalog.detail(params.key) : catalog.compatibleDetail(params.key, query),
    listEventTypes: () => catalog.eventTypes.list(),
    getEventType: ({ params }) => catalog.eventTypes.get(params.eventKey),
    getVersion: ({ params }) => catalog.versionRecord(params.key, params.version),
    listCategories: () => catalog.categories(),
    createExtension: ({ caller, body }) => catalog.create(caller.user, body),
    updateExtension: ({ caller, params, body }) => catalog.update(caller.user, params.key, body),
    publishVersion: ({ caller, params, body }) => catalog.publishVersion(caller.user, params.key, body),
    yankVersion: ({ caller, params, query }) => catalog.yank(caller.user, params.key, params.version, query.reason),
    unyankVersion: ({ caller, params }) => catalog.unyank(caller.user, params.key, params.version),
    listAuditRecords: async ({ query: { cursor, limit, ...query } }) => {
      // A cursor holds for the filter it was given with (a key alone is the scope cursors had before the other filters).
      const narrowed = query.version !== undefined || query.action !== undefined;
      const scope = narrowed ? [query.extensionKey, query.version, query.action].map((part) => part ?? '').join(' ') : (query.extensionKey ?? '');
      const offset = startOffset(cursor, query.offset, 'audit', scope, MAX_AUDIT_OFFSET);
      // One record beyond the limit tells whether more follow.
      const records = await catalog.auditTrail({ ...query, offset, limit: limit + 1 });
      const budget = new PageBudget<AuditRecord>(maxPageBytes);
      for (const record of records.slice(0, limit)) if (!budget.admit(record)) break;
      const more = budget.count < records.length;
      return new PageReply(budget, { limit, offset, ...offsetMeta('audit', scope, offset, budget.count, more) });
    },
  }) satisfies Partial<Handlers>;
