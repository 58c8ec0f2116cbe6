import { createHash, timingSafeEqual } from 'node:crypto';
import { isAdmin } from '../../auth/users.js';
import { DomainError, unauthorized } from '../../errors.js';
import { Readiness } from '../../readiness.js';
import type { RouteModule } from '../context.js';
import { bearerToken } from '../endpoint.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Readiness for load balancers and orchestrators, and metrics for Prometheus. */
export const operationsRoutes: RouteModule = (routes, { endpoint, services: { auth, events, metrics }, config }) => {
  const readiness = new Readiness(config.dataDir, events.dispatcher);
  routes.get(
    '/api/health/ready',
    endpoint({
      access: 'public',
      handle: async () => {
        const reasons = await readiness.reasons();
        if (reasons.length > 0) throw new DomainError('UNAVAILABLE', `not ready: ${reasons.join('; ')}`, { reasons });
        return { status: 'ready' };
      },
    }),
  );

  // Equal-length digests: timingSafeEqual needs them, and the comparison then says nothing about the length.
  const scrapeDigest = config.metricsToken === null ? null : digest(config.metricsToken);
  const mayScrape = async (token: string | null): Promise<boolean> => {
    if (token === null) return false;
    if (scrapeDigest !== null && timingSafeEqual(digest(token), scrapeDigest)) return true;
    try {
      return isAdmin((await auth.authenticate(token)).user);
    } catch {
      return false;
    }
  };
  routes.get(
    '/metrics',
    endpoint({
      access: 'public',
      handle: async ({ event }) => {
        const { req, res } = event.node;
        if (!(await mayScrape(bearerToken(req)))) {
          metrics.metricsRefused();
          throw unauthorized('metrics need an ADMIN session or Authorization: Bearer <PLATFORM_METRICS_TOKEN>');
        }
        const { contentType, text } = await metrics.render();
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
        res.end(text);
      },
    }),
  );
};
