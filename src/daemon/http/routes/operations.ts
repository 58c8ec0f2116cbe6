import { createHash, timingSafeEqual } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { isAdmin } from '../../auth/users.js';
import { streamBackup } from '../../backup/snapshot.js';
import { DomainError, unauthorized } from '../../errors.js';
import { asStorageError } from '../../files.js';
import type { HttpContext } from '../context.js';
import { bearerToken, sessionCookieName, type Handlers } from '../endpoint.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Readiness for load balancers and orchestrators, metrics for Prometheus, backups for the operator. */
export const operationsRoutes = ({ services: { auth, metrics, readiness, box }, config }: HttpContext) => {
  // Equal-length digests: timingSafeEqual needs them, and the comparison then says nothing about the length.
  const scrapeDigest = config.metricsToken === null ? null : digest(config.metricsToken);
  const mayScrape = async (token: string | null): Promise<boolean> => {
    if (token === null) return false;
    if (scrapeDigest !== null && timingSafeEqual(digest(token), scrapeDigest)) return true;
    try {
      const caller = await auth.authenticate(token);
      // An ADMIN's API token scrapes with deliveries:read, as the endpoint table says.
      return isAdmin(caller.user) && (caller.apiToken === null || caller.apiToken.scopes.includes('deliveries:read'));
    } catch {
      return false;
    }
  };
  return {
    getReadiness: async () => {
      const reasons = await readiness.reasons();
      if (reasons.length > 0) throw new DomainError('UNAVAILABLE', `not ready: ${reasons.join('; ')}`, { reasons });
      return { status: 'ready' };
    },
    getMetrics: async ({ event }) => {
      const { req, res } = event.node;
      if (!(await mayScrape(bearerToken(req, sessionCookieName(config.secureCookies))))) {
        metrics.metricsRefused();
        throw unauthorized('metrics need an ADMIN session or Authorization: Bearer <PLATFORM_METRICS_TOKEN>');
      }
      const { contentType, text } = await metrics.render();
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
      res.end(text);
    },
    downloadBackup: async ({ query, event }) => {
      const backup = await streamBackup(config.dataDir, { includeKeys: query.includeKeys === 'true', masterKey: box.currentKey }).catch((error) => {
        throw asStorageError(error);
      });
      const { res } = event.node;
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      res.writeHead(200, {
        'content-type': 'application/gzip',
        'content-disposition': `attachment; filename="platform-backup-${stamp}.tar.gz"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      try {
        await pipeline(backup.stream, res, { end: false });
      } catch {
        // The client went away or the snapshot could not be read: the archive it has is
        // incomplete, and a restore refuses it (its manifest lists what is missing).
        res.destroy();
      } finally {
        // The snapshot directory is gone before the answer ends.
        await backup.done;
      }
      res.end();
    },
  } satisfies Partial<Handlers>;
};
