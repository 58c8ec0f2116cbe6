import type { ServerResponse } from 'node:http';
import type { AuthService, Caller } from '../auth/service.js';
import { DomainError, RateLimitedError, invalid, unavailable } from '../errors.js';
import type { ActivityFeed, ActivityItem } from '../events/activity.js';
import type { WorkspaceService } from '../workspaces/service.js';
import { bearerToken } from './endpoint.js';
import { abandonAnswer, endsWhenClientLeaves } from './observe.js';

/** Open streams in all, and per user: what clients can make the daemon hold is bounded. */
const MAX_STREAMS = 1_000;
const MAX_STREAMS_PER_USER = 20;
/**
 * A consumer is dropped once more than this many bytes of new items arrived
 * for it while it had not taken what it was last given: its own lag. What
 * waits for it otherwise (the history it resumes with, a burst that arrived
 * while it was keeping up) is not its lag: that is written in pieces as its
 * socket takes them, and stays bounded by the history.
 */
const MAX_UNREAD_BYTES = 1024 * 1024;
/** One write to a consumer's socket carries at most this many bytes (one item at least): what the daemon copies per stream. */
const PIECE_BYTES = 64 * 1024;
/**
 * Items reach a stream in one write at most this long after they happen: at
 * thousands of items a second, a write per item per stream costs the daemon
 * more than everything else it does for them.
 */
const FLUSH_MS = 20;
const CONNECTED = Buffer.from(': connected\n\n');
const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');

export interface StreamDeps {
  auth: AuthService;
  workspaces: WorkspaceService;
  activity: ActivityFeed;
  heartbeatMs: number;
  sessionCookie: string;
}

/** Which items a stream shows, and whether its caller may still read it. */
export interface StreamScope {
  workspaceId: string | null;
  stillAllowed(caller: Caller): void | Promise<void>;
}

/**
 * Server-sent events of the activity feed. A stream checks its caller again
 * as soon as the auth or workspace service reports a change of access, and on
 * every heartbeat (a revoked session, a disabled account, a lost role or
 * membership ends it), and is dropped when its consumer stops reading.
 */
export class LiveStreams {
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
    const token = bearerToken(res.req, this.deps.sessionCookie)!;
    // The client left while it was being authenticated: its close has passed, nothing to count.
    if (res.req.socket.destroyed) return;

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
    /** Frames not written yet; `lag` marks those that arrived while a piece was in flight. */
    const waiting: Array<{ frame: Buffer; lag: boolean }> = [];
    let lagBytes = 0;
    /** A piece was handed to the socket and the consumer has not taken it yet (its write has not completed). */
    let inFlight = false;
    let flushTimer: NodeJS.Timeout | null = null;
    /** Writes the next piece once the consumer took the previous one, until nothing waits. */
    const flush = () => {
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = null;
      if (inFlight || res.destroyed || res.writableEnded || waiting.length === 0) return;
      const frames: Buffer[] = [];
      let bytes = 0;
      while (waiting.length > 0 && (frames.length === 0 || bytes + waiting[0]!.frame.length <= PIECE_BYTES)) {
        const { frame, lag } = waiting.shift()!;
        if (lag) lagBytes -= frame.length;
        frames.push(frame);
        bytes += frame.length;
      }
      inFlight = true;
      res.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames, bytes), () => {
        inFlight = false;
        flush();
      });
    };
    const send = (frame: Buffer) => {
      if (res.destroyed || res.writableEnded) return;
      waiting.push({ frame, lag: inFlight });
      if (!inFlight) {
        flushTimer ??= setTimeout(flush, FLUSH_MS);
        return;
      }
      lagBytes += frame.length;
      // It has not taken what it was given, and more than its budget came since: it is dropped, and resumes with Last-Event-ID.
      if (lagBytes > MAX_UNREAD_BYTES) {
        waiting.length = 0;
        abandonAnswer(res);
      }
    };
    const sendItem = (item: ActivityItem) => {
      if (visible(item)) send(item.frame);
    };
    /** Ends the stream with a comment saying why: after what waits (the daemon stops), or at once (the caller lost access). */
    const end = (reason: string, waitingItems: 'sent' | 'dropped') => {
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = null;
      if (res.writableEnded || res.destroyed) return;
      if (waitingItems === 'sent') for (const { frame } of waiting) res.write(frame);
      waiting.length = 0;
      res.end(`: ${reason}\n\n`);
    };

    send(CONNECTED);
    // The kept items after Last-Event-ID wait behind it, before the first write: the history, not lag.
    const unsubscribe = this.deps.activity.follow(lastEventId, { item: sendItem, closed: () => end('the daemon is stopping', 'sent') });
    flush();
    const stream = {
      userId,
      check: () =>
        void this.deps.auth
          .authenticate(token)
          .then((current) => scope.stillAllowed(current))
          .catch((error: unknown) => end(`closed: ${error instanceof DomainError ? error.message : 'the caller could not be checked'}`, 'dropped')),
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
  }
}

function parseLastEventId(header: string | string[] | undefined): number | null {
  if (header === undefined || header === '') return null;
  if (typeof header !== 'string' || !/^\d{1,16}$/.test(header)) {
    throw invalid('Last-Event-ID', 'must be the id of an item of this stream');
  }
  return Number(header);
}
