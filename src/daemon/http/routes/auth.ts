import { setCookie, type H3Event } from 'h3';
import { ChangePasswordBody, LoginBody } from '../../auth/schemas.js';
import { toPublicUser } from '../../auth/users.js';
import type { RouteModule } from '../context.js';
import { sessionCookieName } from '../endpoint.js';

/** The TCP peer: behind a reverse proxy, the proxy's address. */
const clientAddressOf = (event: H3Event) => event.node.req.socket.remoteAddress ?? 'unknown';
/** A login or password change is well under 1 KiB: nobody needs the daemon's 1 MiB to send one, anonymously least of all. */
const AUTH_MAX_BODY_BYTES = 8 * 1024;

export const authRoutes: RouteModule = (routes, { endpoint, services: { auth }, config }) => {
  const cookieName = sessionCookieName(config.secureCookies);
  // No Domain: the cookie stays with this host (a __Host- cookie must not have one).
  const setSessionCookie = (event: H3Event, token: string, maxAge: number) =>
    setCookie(event, cookieName, token, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      maxAge,
      secure: config.secureCookies,
    });

  routes.post(
    '/api/auth/login',
    endpoint({
      access: 'public',
      body: LoginBody,
      maxBodyBytes: AUTH_MAX_BODY_BYTES,
      handle: async ({ body, event }) => {
        const { user, session } = await auth.login(body, clientAddressOf(event));
        setSessionCookie(event, session.token, auth.tokens.ttlSeconds);
        return user;
      },
    }),
  );

  routes.get(
    '/api/auth/me',
    endpoint({ access: 'user', handle: ({ caller }) => toPublicUser(caller.user) }),
  );

  routes.put(
    '/api/auth/me/password',
    endpoint({
      access: 'user',
      body: ChangePasswordBody,
      maxBodyBytes: AUTH_MAX_BODY_BYTES,
      handle: async ({ caller, body, event }) => {
        const session = await auth.changePassword(caller, body, clientAddressOf(event));
        setSessionCookie(event, session.token, auth.tokens.ttlSeconds);
        return null;
      },
    }),
  );

  routes.post(
    '/api/auth/logout',
    endpoint({
      access: 'user',
      handle: async ({ caller, event }) => {
        await auth.logout(caller);
        setSessionCookie(event, '', 0);
        return null;
      },
    }),
  );
};
