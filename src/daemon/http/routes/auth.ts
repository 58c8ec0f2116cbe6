import { setCookie, type H3Event } from 'h3';
import { toPublicUser } from '../../auth/users.js';
import type { HttpContext } from '../context.js';
import { bearerToken, sessionCookieName, type Handlers } from '../endpoint.js';
import { DomainError } from '../../errors.js';

/** The TCP peer: behind a reverse proxy, the proxy's address. */
const clientAddressOf = (event: H3Event) => event.node.req.socket.remoteAddress ?? 'unknown';

export const authRoutes = ({ services: { auth }, config }: HttpContext) => {
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

  return {
    // The console asks at its first load whether the browser's cookie is a session, without a 401 to log when it is not.
    getSession: async ({ event }) => {
      const token = bearerToken(event.node.req, cookieName);
      if (!token) return null;
      try {
        return toPublicUser((await auth.authenticate(token)).user);
      } catch (error) {
        if (error instanceof DomainError) return null;
        throw error;
      }
    },
    createSession: async ({ body, event }) => {
      const { user, session } = await auth.login(body, clientAddressOf(event));
      setSessionCookie(event, session.token, auth.tokens.ttlSeconds);
      return user;
    },
    getCurrentUser: ({ caller }) => toPublicUser(caller.user),
    changePassword: async ({ caller, body, event }) => {
      const session = await auth.changePassword(caller, body, clientAddressOf(event));
      setSessionCookie(event, session.token, auth.tokens.ttlSeconds);
      return null;
    },
    endSession: async ({ caller, event }) => {
      await auth.logout(caller);
      setSessionCookie(event, '', 0);
      return null;
    },
    createApiToken: ({ caller, body }) => auth.apiTokens.create(caller.user.id, body),
    listApiTokens: ({ caller }) => auth.apiTokens.list(caller.user.id),
    revokeApiToken: ({ caller, params }) => auth.apiTokens.revoke(params.tokenId, caller.user.id),
    listAllApiTokens: () => auth.apiTokens.listAll(),
    revokeAnyApiToken: ({ params }) => auth.apiTokens.revoke(params.tokenId, null),
  } satisfies Partial<Handlers>;
};
