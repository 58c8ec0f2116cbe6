import { SDK_VERSION } from '../../../handlers/sdk.js';
import { PLATFORM_VERSION } from '../../version.js';
import type { RouteModule } from '../context.js';

export const healthRoutes: RouteModule = (routes, { endpoint }) => {
  routes.get(
    '/api/health',
    endpoint({
      access: 'public',
      handle: () => ({ status: 'ok', version: PLATFORM_VERSION, sdkVersion: SDK_VERSION }),
    }),
  );
};
