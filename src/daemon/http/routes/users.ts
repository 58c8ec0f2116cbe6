import * as v from 'valibot';
import { CreateUserBody, PatchUserBody, ResetPasswordBody } from '../../auth/schemas.js';
import type { RouteModule } from '../context.js';

const UserParams = v.object({ id: v.pipe(v.string(), v.uuid('must be a user id')) });

export const userRoutes: RouteModule = (routes, { endpoint, services: { auth } }) => {
  routes.post(
    '/api/admin/users',
    endpoint({ access: 'admin', body: CreateUserBody, status: 201, handle: ({ body }) => auth.createUser(body) }),
  );
  routes.get('/api/admin/users', endpoint({ access: 'admin', handle: () => auth.listUsers() }));
  routes.patch(
    '/api/admin/users/:id',
    endpoint({
      access: 'admin',
      params: UserParams,
      body: PatchUserBody,
      handle: ({ params, body }) => auth.updateUser(params.id, body),
    }),
  );
  routes.delete(
    '/api/admin/users/:id',
    endpoint({
      access: 'admin',
      params: UserParams,
      status: 204,
      handle: ({ caller, params }) => auth.deleteUser(caller, params.id),
    }),
  );
  routes.post(
    '/api/admin/users/:id/password',
    endpoint({
      access: 'admin',
      params: UserParams,
      body: ResetPasswordBody,
      handle: ({ params, body }) => auth.resetPassword(params.id, body.password),
    }),
  );
};
