export interface LogSink {
  out(text: string): void;
  err(text: string): void;
}

export interface Logger {
  info(message: string): void;
  /** Something the operator should act on; the daemon carries on. */
  warn(message: string): void;
  error(message: string): void;
  /** One line per request: never a body, a query string or a header value. */
  access(method: string, path: string, status: number, ms: number): void;
  flush(): void;
}

const processSink: LogSink = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/**
 * Lines are buffered and written once per event-loop turn: stdout is a
 * synchronous pipe on Linux, and a write per request is measurable at load.
 */
export function createLogger(sink: LogSink = processSink): Logger {
  let buffered: string[] = [];
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    if (buffered.length === 0) return;
    const text = buffered.join('');
    buffered = [];
    sink.out(text);
  };
  const write = (line: string) => {
    buffered.push(line);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  // Many lines share a millisecond under load: format each millisecond once.
  let stampedAt = 0;
  let stamp = '';
  const timestamp = () => {
    const now = Date.now();
    if (now !== stampedAt) {
      stampedAt = now;
      stamp = new Date(now).toISOString();
    }
    return stamp;
  };

  return {
    info: (message) => write(`${timestamp()} ${message}\n`),
    warn: (message) => write(`${timestamp()} warning: ${message}\n`),
    error: (message) => {
      flush();
      sink.err(`${timestamp()} error: ${message}\n`);
    },
    access: (method, path, status, ms) =>
      write(`${timestamp()} ${method} ${path} ${status} ${ms.toFixed(1)}ms\n`),
    flush,
  };
}
