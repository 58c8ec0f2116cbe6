import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineEventHandler, getRequestPath, serveStatic, setResponseHeaders, type EventHandler, type H3Event } from 'h3';
import { consoleHeaders } from './headers.js';

/** `vite build` writes here; the same path from src/daemon/http (tests) and dist/daemon/http (installed). */
export const CONSOLE_DIR = fileURLToPath(new URL('../../../dist/console/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface ConsoleFile {
  urlPath: string;
  contents: Buffer;
  type: string;
  etag: string;
  mtime: Date;
  hashed: boolean;
}

/** The compressed copies the build makes of each text file (vite.config.ts), by Content-Encoding, best first. */
const ENCODINGS = { br: '.br', gzip: '.gz' } as const;
type Encoding = keyof typeof ENCODINGS;
const ENCODED = /\.(br|gz)$/;

/** The best encoding the request accepts (brotli before gzip, whatever order the browser lists them in), or null. */
function preferredEncoding(acceptEncoding: string | undefined): Encoding | null {
  const accepted = new Set(
    (acceptEncoding ?? '')
      .split(',')
      .map((part) => part.trim().split(';'))
      .filter(([, ...params]) => !params.some((param) => /^\s*q=0(\.0*)?\s*$/.test(param)))
      .map(([name]) => name!.trim().toLowerCase()),
  );
  return (Object.keys(ENCODINGS) as Encoding[]).find((encoding) => accepted.has(encoding)) ?? null;
}

/**
 * Reads the built console once: it does not change while the daemon runs, and
 * serving only files listed here means no request path ever reaches the file
 * system. Null when the console has not been built.
 */
function loadConsole(dir: string): Map<string, ConsoleFile> | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const files = new Map<string, ConsoleFile>();
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, name);
    const stat = statSync(path);
    if (!stat.isFile()) continue;
    const contents = readFileSync(path);
    const urlPath = `/${relative(dir, path).split(sep).join('/')}`;
    files.set(urlPath, {
      urlPath,
      contents,
      type: TYPES[extname(name)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(contents).digest('base64url').slice(0, 27)}"`,
      mtime: stat.mtime,
      hashed: urlPath.startsWith('/assets/'),
    });
  }
  return files;
}

const isApiPath = (path: string) => path === '/api' || path.startsWith('/api/');
const withoutQuery = (pathAndQuery: string) => {
  const query = pathAndQuery.indexOf('?');
  return query < 0 ? pathAndQuery : pathAndQuery.slice(0, query);
};

/** The console as an h3 layer: its handler, and which requests reach it at all. */
export interface ConsoleLayer {
  handler: EventHandler;
  /** h3 calls this before the handler: API requests (nearly all) skip the console without an async call. */
  match: (path: string, event?: H3Event) => boolean;
}

/**
 * The console in front of the API: a built file by its path, and the page for
 * every other GET outside `/api` (client-side routes survive a reload).
 * `reserved` are the router's own paths outside `/api` (such as /metrics),
 * which the page must not shadow. Anything else falls through to the router.
 */
export function consoleLayer(reserved: ReadonlySet<string>): ConsoleLayer | null {
  const files = loadConsole(CONSOLE_DIR);
  const page = files?.get('/index.html');
  if (!files || !page) return null;
  const match = (pathAndQuery: string, event?: H3Event) => {
    if (event && event.method !== 'GET' && event.method !== 'HEAD') return false;
    const path = withoutQuery(pathAndQuery);
    return !isApiPath(path) && !reserved.has(path);
  };
  const handler = defineEventHandler(async (event) => {
    const path = withoutQuery(getRequestPath(event));
    // A compressed copy is served for its file, never by its own name.
    const file = ENCODED.test(path) ? undefined : (files.get(path) ?? (path.startsWith('/assets/') ? undefined : page));
    // A missing asset (an old hash after an upgrade) is a 404, not the page under a script's name.
    if (!file) return;
    const headers = consoleHeaders(file.hashed ? 'hashed-asset' : 'page');
    setResponseHeaders(event, headers);
    // serveStatic asks for the request's path with each accepted encoding's suffix first (Vary: Accept-Encoding), then as is.
    const representation = (id: string): { file: ConsoleFile; encoding?: string } | undefined => {
      if (id === path) return { file };
      const variant = Object.entries(ENCODINGS).find(([, suffix]) => id === path + suffix);
      const compressed = variant && files.get(file.urlPath + variant[1]);
      return compressed ? { file: compressed, encoding: variant[0] } : undefined;
    };
    const encoding = preferredEncoding(event.node.req.headers['accept-encoding']);
    // The answer depends on Accept-Encoding whenever a compressed copy exists.
    if (files.has(file.urlPath + ENCODINGS.br)) event.node.res.setHeader('vary', 'accept-encoding');
    const served = await serveStatic(event, {
      encodings: encoding === null ? {} : { [encoding]: ENCODINGS[encoding] },
      getMeta: (id) => {
        const found = representation(id);
        if (!found) return undefined;
        // Each form has its own ETag: a cache must not answer a gzip request with brotli bytes.
        const { etag, mtime, contents } = found.file;
        return { type: file.type, etag, mtime, size: contents.length, ...(found.encoding ? { encoding: found.encoding } : {}) };
      },
      getContents: (id) => representation(id)?.file.contents,
      fallthrough: true,
    });
    // serveStatic refuses paths with `..` segments: those go on to the router's JSON 404.
    if (served === false) for (const name of Object.keys(headers)) event.node.res.removeHeader(name);
  });
  return { handler, match };
}
