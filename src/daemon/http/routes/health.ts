import { SDK_VERSION } from '../../../handlers/sdk.js';
import { PLATFORM_VERSION } from '../../version.js';
import type { HttpContext } from '../context.js';
import type { Handlers } from '../endpoint.js';

export const healthRoutes = (_: HttpContext) =>
  ({
    getHealth: () => ({ status: 'ok', version: PLATFORM_VERSION, sdkVersion: SDK_VERSION }),
  }) satisfies Partial<Handlers>;
