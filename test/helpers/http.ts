export interface Envelope<T = any> {
  code: string;
  message: string | null;
  data: T;
  meta: any;
  timestamp: string;
}

export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed envelope, or null for an empty body. */
  body: Envelope<T>;
}

export interface CallOptions {
  json?: unknown;
  /** Sent as is; set content-type yourself. */
  raw?: string | Buffer;
  token?: string;
  headers?: Record<string, string>;
}

/** One HTTP call over the network to a running daemon. */
export async function call<T = any>(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  } else if (options.raw !== undefined) {
    body = options.raw;
  }
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const response = await fetch(baseUrl + path, { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : null };
}

/** A client bound to one daemon and, optionally, one token. */
export function api(baseUrl: string, token?: string) {
  const send = <T = any>(method: string, path: string, options: CallOptions = {}) =>
    call<T>(baseUrl, method, path, { token, ...options });
  return {
    get: <T = any>(path: string, options?: CallOptions) => send<T>('GET', path, options),
    post: <T = any>(path: string, json?: unknown, options?: CallOptions) => send<T>('POST', path, { json, ...options }),
    put: <T = any>(path: string, json?: unknown, options?: CallOptions) => send<T>('PUT', path, { json, ...options }),
    patch: <T = any>(path: string, json?: unknown, options?: CallOptions) => send<T>('PATCH', path, { json, ...options }),
    delete: <T = any>(path: string, options?: CallOptions) => send<T>('DELETE', path, options),
    send,
  };
}

export type Api = ReturnType<typeof api>;

/** The session token from a login answer's Set-Cookie header (`__Host-platform_token` behind TLS). */
export function tokenOf(result: HttpResult): string {
  for (const cookie of result.headers.getSetCookie()) {
    const match = /^(?:__Host-)?platform_token=([^;]*)/.exec(cookie);
    if (match) return match[1]!;
  }
  throw new Error(`no platform_token cookie in the answer (status ${result.status}: ${result.text})`);
}
