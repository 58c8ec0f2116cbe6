import type { HttpContext } from '../context.js';
import type { Handlers } from '../endpoint.js';

export const extensionConfigRoutes = ({ services: { extensionConfig } }: HttpContext) =>
  ({
    getExtensionConfig: ({ params }) => extensionConfig.view(params.key),
    updateExtensionConfig: ({ params, body }) => extensionConfig.update(params.key, body.fields),
    deleteConfigField: ({ params }) => extensionConfig.remove(params.key, params.field),
  }) satisfies Partial<Handlers>;
