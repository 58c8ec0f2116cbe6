import type { HttpContext } from '../context.js';
import type { Handlers } from '../endpoint.js';

export const userRoutes = ({ services: { auth } }: HttpContext) =>
  ({
    createUser: ({ body }) => auth.createUser(body),
    listUsers: () => auth.listUsers(),
    updateUser: ({ params, body }) => auth.updateUser(params.id, body),
    deleteUser: ({ caller, params }) => auth.deleteUser(caller, params.id),
    resetPassword: ({ params, body }) => auth.resetPassword(params.id, body.password),
  }) satisfies Partial<Handlers>;
