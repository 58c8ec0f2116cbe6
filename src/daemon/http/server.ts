import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { toNodeListener, type App } from 'h3';
import { listen } from 'listhen';
import { StartupError } from '../errors.js';
import type { Logger } from '../log.js';
import { sendEnvelope } from './envelope.js';

export interface HttpServer {
  url: string;
  port: number;
  server: Server;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then closes every connection. */
  close(graceMs: number): Promise<void>;
}

type TimedResponse = ServerResponse & { startedAt: number };

const pathOnly = (url: string | undefined) => {
  const path = url ?? '/';
  const query = path.indexOf('?');
  return query < 0 ? path : path.slice(0, query);
};

export async function startHttpServer(app: App, options: { host: string; port: number }, logger: Logger): Promise<HttpServer> {
  const handle = toNodeListener(app);
  let draining = false;

  // One shared listener rather than a closure (and a once wrapper) per request.
  function logAccess(this: TimedResponse) {
    logger.access(this.req.method ?? '-', pathOnly(this.req.url), this.statusCode, performance.now() - this.startedAt);
  }

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    (res as TimedResponse).startedAt = performance.now();
    res.on('close', logAccess);
    if (draining) {
      res.setHeader('connection', 'close');
      sendEnvelope(res, 503, { code: 'UNAVAILABLE', message: 'the daemon is shutting down', data: null, meta: null });
      return;
    }
    void handle(req, res);
  };

  let listening: Awaited<ReturnType<typeof listen>>;
  try {
    listening = await listen(listener, {
      // listhen reads port 0 as "the default port"; asking for a random one is how to get an ephemeral port.
      port: options.port === 0 ? { port: 0, random: true } : options.port,
      hostname: options.host,
      // Without isProd, listhen silently moves to another port when this one is taken.
      isProd: true,
      showURL: false,
      // listhen's autoClose exits the process on SIGTERM; our own stop does it gracefully.
      autoClose: false,
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new StartupError(`cannot listen on ${options.host}:${options.port}: ${reason}`);
  }

  const server = listening.server as Server;
  // Slow clients may not hold connections open forever.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    async close(graceMs) {
      draining = true;
      const closed = listening.close();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
      server.closeAllConnections();
    },
  };
}
