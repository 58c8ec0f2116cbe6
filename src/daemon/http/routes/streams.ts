import type { ServerResponse } from 'node:http';
import * as v from 'valibot';
import type { AuthService, Caller } from '../../auth/service.js';
import { isAdmin } from '../../auth/users.js';
import { DomainError, RateLimitedError, forbidden, invalid, unavailable } from '../../errors.js';
import type { ActivityFeed, ActivityItem } from '../../events/activity.js';
import { Slug } from '../../validation.js';
import type { WorkspaceService } from '../../workspaces/service.js';
import type { RouteModule } from '../context.js';
import { ANSWERED_BY_HANDLER, bearerToken } from '../endpoint.js';
import { abandonAnswer, endsWhenClientLeaves } from '../observe.js';
import { workspaceMember } from './access.js';

/** Open streams in all, and per user: what clients can make the daemon hold is bounded. */
const MAX_STREAMS = 1_000;
const MAX_STREAMS_PER_USER = 20;
/** A consumer that leaves more than this unread is dropped rather than buffered for. */
const MAX_UNREAD_BYTES = 1024 * 1024;
/**
 * Items reach a stream in one write at most this long after they happen: at
 * thousands of items a second, a write per item per stream costs the daemon
 * more than everything else it does for them.
 */
const FLUSH_MS = 20;
const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');

const WorkspaceParams = v.object({ id: Slug });
const SSE = {
  contentType: 'text/event-stream',
  description: 'server-sent events of the activity feed (`id`, `event`, `data` per item); send Last-Event-ID to resume',
};

interface StreamDeps {
  auth: AuthService;
  workspaces: WorkspaceService;
  activity: ActivityFeed;
  heartbeatMs: number;
}

/** Which items a stream shows, and whether its caller may still read it. */
interface StreamScope {
  workspaceId: string | null;
  stillAllowed(caller: Caller): void | Promise<void>;
}

export const streamRoutes: RouteModule = (routes, { endpoint, services, config }) => {
  const streams = new LiveStreams({
    auth: services.auth,
    workspaces: services.workspaces,
    activity: services.activity,
    heartbeatMs: config.streamHeartbeatMs,
  });
  const member = workspaceMember(services.workspaces);

  routes.get(
    '/api/workspaces/:id/stream',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      answers: SSE,
      handle: async ({ params, caller, event }) => {
        await services.workspaces.assertExists(params.id);
        return streams.start(event.node.req.headers, event.node.res, caller, {
          workspaceId: params.id,
          stillAllowed: async (current) => {
            await services.workspaces.assertExists(params.id);
            await member(current, { id: params.id });
          },
        });
      },
    }),
  );
  routes.get(
    '/api/admin/stream',
    endpoint({
      access: 'admin',
      answers: SSE,
      handle: ({ caller, event }) =>
        streams.start(event.node.req.headers, event.node.res, caller, {
          workspaceId: null,
          stillAllowed: (current) => {
            if (!isAdmin(current.user)) throw forbidden('this action requires the ADMIN role');
          },
        }),
    }),
  );
};

/**
 * Server-sent events of the activity feed. A stream checks its caller again
 * as soon as the auth or workspace service reports a change of access, and on
 * every heartbeat (a revoked session, a disabled account, a lost role or
 * membership ends it), and is dropped when its consumer stops reading.
 */
class LiveStreams {
  private total = 0;
  private readonly perUser = new Map<string, number>();
  private readonly open = new Set<{ userId: string; check: () => void }>();

  constructor(private readonly deps: StreamDeps) {
    deps.auth.onAccessChanged((userId) => this.checkAgain(userId));
    deps.workspaces.onAccessChanged((userId) => this.checkAgain(userId));
  }

  /** null: every stream. */
  private checkAgain(userId: string | null): void {
    for (const stream of this.open) if (userId === null || stream.userId === userId) stream.check();
  }

  start(headers: Record<string, string | string[] | undefined>, res: ServerResponse, caller: Caller, scope: StreamScope) {
    const lastEventId = parseLastEventId(headers['last-event-id']);
    const userId = caller.user.id;
    if ((this.perUser.get(userId) ?? 0) >= MAX_STREAMS_PER_USER) {
      throw new RateLimitedError(`at most ${MAX_STREAMS_PER_USER} live streams per user are open at once`, 10);
    }
    if (this.total >= MAX_STREAMS) throw unavailable(`the daemon serves at most ${MAX_STREAMS} live streams at once; try again later`);
    // The endpoint authenticated this token: it is there.
    const token = bearerToken(res.req)!;
    // The client left while it was being authenticated: its close has passed, nothing to count.
    if (res.req.socket.destroyed) return ANSWERED_BY_HANDLER;

    this.total += 1;
    this.perUser.set(userId, (this.perUser.get(userId) ?? 0) + 1);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // Proxies such as nginx would otherwise hold events back.
      'x-accel-buffering': 'no',
    });
    endsWhenClientLeaves(res);

    const visible = (item: ActivityItem) => scope.workspaceId === null || item.workspaceId === scope.workspaceId;
    let unsent: Buffer[] = [];
    let unsentBytes = 0;
    let flushTimer: NodeJS.Timeout | null = null;
    const flush = () => {
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = null;
      if (res.destroyed || unsentBytes === 0) return;
      res.write(Buffer.concat(unsent, unsentBytes));
      unsent = [];
      unsentBytes = 0;
      // writableLength counts what the socket has not handed to the kernel yet.
      if (res.writableLength > MAX_UNREAD_BYTES) abandonAnswer(res);
    };
    const send = (bytes: Buffer) => {
      if (res.destroyed) return;
      unsent.push(bytes);
      unsentBytes += bytes.length;
      if (unsentBytes + res.writableLength > MAX_UNREAD_BYTES) abandonAnswer(res);
      else flushTimer ??= setTimeout(flush, FLUSH_MS);
    };
    const sendItem = (item: ActivityItem) => {
      if (visible(item)) send(item.frame);
    };
    const end = (reason: string) => {
      flush();
      if (!res.writableEnded && !res.destroyed) res.end(`: ${reason}\n\n`);
    };

    send(Buffer.from(': connected\n\n'));
    flush();
    const unsubscribe = this.deps.activity.follow(lastEventId, { item: sendItem, closed: () => end('the daemon is stopping') });
    const stream = {
      userId,
      check: () =>
        void this.deps.auth
          .authenticate(token)
          .then((current) => scope.stillAllowed(current))
          .catch((error: unknown) => end(`closed: ${error instanceof DomainError ? error.message : 'the caller could not be checked'}`)),
    };
    this.open.add(stream);
    const heartbeat = setInterval(() => {
      send(KEEP_ALIVE);
      stream.check();
    }, this.deps.heartbeatMs);

    res.once('close', () => {
      this.open.delete(stream);
      clearInterval(heartbeat);
      if (flushTimer) clearTimeout(flushTimer);
      unsubscribe();
      this.total -= 1;
      const left = (this.perUser.get(userId) ?? 1) - 1;
      if (left > 0) this.perUser.set(userId, left);
      else this.perUser.delete(userId);
    });
    return ANSWERED_BY_HANDLER;
  }
}

function parseLastEventId(header: string | string[] | undefined): number | null {
  if (header === undefined || header === '') return null;
  if (typeof header !== 'string' || !/^\d{1,16}$/.test(header)) {
    throw invalid('Last-Event-ID', 'must be the id of an item of this stream');
  }
  return Number(header);
}
