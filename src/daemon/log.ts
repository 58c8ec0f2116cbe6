import { isoNow } from './iso-now.js';

export interface LogSink {
  out(text: string): void;
  err(text: string): void;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Extra fields of a line. Callers pass identifiers and counts only: never a body, header value or secret. */
export type LogFields = Record<string, string | number | boolean | null>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /**
   * One line per request, when access lines are on (see LoggerOptions.access).
   * `route` is the route pattern (`/api/workspaces/:id`), never the raw path:
   * ids and query strings stay out. `requestId` is one the server made or
   * found sane: it needs no escaping. Positional, so that no object is made
   * per request.
   */
  access(method: string, route: string, status: number, durationMs: number, requestId: string): void;
  flush(): void;
}

export interface LoggerOptions {
  sink?: LogSink;
  /** Default: text when stdout is a terminal, JSON lines otherwise (for log collectors). */
  format?: LogFormat;
  /** Lines below this level are dropped. Default info. */
  level?: LogLevel;
  /**
   * Access lines (level info). Default: on when stdout is not a terminal (a file
   * or a collector keeps them), on a terminal only at level debug.
   */
  access?: boolean;
}

const processSink: LogSink = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/**
 * Access lines wait up to ACCESS_LINES_WAIT_MS (or until ACCESS_LINES_BYTES are
 * waiting) and go out in one write: stdout is a synchronous pipe or file on
 * Linux, and below saturation, when each event-loop turn answers one or two
 * requests, a write per turn was a write per request: a system call each,
 * which showed in the benchmark. Every other line
 * goes out on the next turn, with whatever access lines wait; errors at once.
 * The daemon flushes when it stops; a killed process loses at most the last
 * ACCESS_LINES_WAIT_MS of access lines. (This is why the daemon keeps its own
 * small logger rather than pino: the batching gives pino's main advantage, and
 * the callers hand over only fields that are safe to log, so there is nothing
 * to redact.)
 */
const ACCESS_LINES_WAIT_MS = 50;
const ACCESS_LINES_BYTES = 64 * 1024;

export function createLogger(options: LoggerOptions = {}): Logger {
  const sink = options.sink ?? processSink;
  const terminal = options.sink === undefined && process.stdout.isTTY === true;
  const format = options.format ?? (terminal ? 'text' : 'json');
  const threshold = RANK[options.level ?? 'info'];
  const accessOn = (options.access ?? (!terminal || options.level === 'debug')) && threshold <= RANK.info;

  let buffered: string[] = [];
  let bufferedBytes = 0;
  let nextTurn = false;
  let accessTimer: NodeJS.Timeout | null = null;

  const flush = () => {
    if (accessTimer !== null) {
      clearTimeout(accessTimer);
      accessTimer = null;
    }
    if (buffered.length === 0) return;
    const text = buffered.join('');
    buffered = [];
    bufferedBytes = 0;
    sink.out(text);
  };
  const write = (line: string) => {
    buffered.push(line);
    if (!nextTurn) {
      nextTurn = true;
      setImmediate(() => {
        nextTurn = false;
        flush();
      });
    }
  };
  const writeAccess = (line: string) => {
    buffered.push(line);
    bufferedBytes += line.length;
    if (bufferedBytes >= ACCESS_LINES_BYTES) flush();
    else accessTimer ??= setTimeout(flush, ACCESS_LINES_WAIT_MS);
  };

  // Methods and route patterns are a small set repeated on every access line: each is quoted once.
  const quotedNames = new Map<string, string>();
  const quoted = (name: string) => {
    let literal = quotedNames.get(name);
    if (literal === undefined) {
      literal = JSON.stringify(name);
      if (quotedNames.size < 1024) quotedNames.set(name, literal);
    }
    return literal;
  };
  // Built by hand rather than by JSON.stringify of an object: this runs on every request.
  const jsonAccess = (method: string, route: string, status: number, durationMs: number, requestId: string) =>
    writeAccess(
      `{"time":"${isoNow()}","level":"info","msg":"request","method":${quoted(method)},"route":${quoted(route)},` +
        `"status":${status},"durationMs":${Math.round(durationMs * 10) / 10},"requestId":"${requestId}"}\n`,
    );
  const textAccess = (method: string, route: string, status: number, durationMs: number, requestId: string) =>
    writeAccess(`${isoNow()} ${method} ${route} ${status} ${durationMs.toFixed(1)}ms ${requestId}\n`);

  const formatLine = format === 'json' ? jsonLine : textLine;
  const emit = (level: LogLevel) => (message: string, fields?: LogFields) => {
    if (RANK[level] < threshold) return;
    const line = formatLine(isoNow(), level, message, fields);
    if (level === 'error') {
      flush();
      sink.err(line);
    } else {
      write(line);
    }
  };

  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    access: accessOn ? (format === 'json' ? jsonAccess : textAccess) : () => undefined,
    flush,
  };
}

function jsonLine(time: string, level: LogLevel, msg: string, fields?: LogFields): string {
  return JSON.stringify({ time, level, msg, ...fields }) + '\n';
}

function textLine(time: string, level: LogLevel, msg: string, fields?: LogFields): string {
  let line = level === 'info' ? `${time} ${msg}` : `${time} ${level}: ${msg}`;
  if (fields) for (const [key, value] of Object.entries(fields)) line += ` ${key}=${JSON.stringify(value)}`;
  return line + '\n';
}
