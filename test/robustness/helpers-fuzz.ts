import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';

/** A request exactly as it goes on the wire: the path is not encoded, the headers are not completed. */
export interface RawRequest {
  method: string;
  /** Sent as is (Node writes it as latin1): percent escapes, odd bytes and all. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Sent without Content-Length, in chunks of 16 KiB, so the daemon only learns the size while reading. */
  chunked?: boolean;
}

export interface RawAnswer {
  status: number;
  contentType: string | undefined;
  text: string;
}

/** How long an answer may take before the case counts as a hang. Not a speed assertion: answers take milliseconds. */
const ANSWER_TIMEOUT_MS = 15_000;
const CHUNK = 16 * 1024;

/**
 * Sends raw requests over one keep-alive connection at a time. A request that
 * fails on a reused connection is sent once more on a fresh one, as Node
 * advises: the daemon may have closed that idle connection just before (after
 * a 413, for instance). A request that fails on a fresh connection is a
 * dropped connection, and rejects.
 */
export function rawClient(baseUrl: string) {
  const { hostname, port } = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  const attempt = (raw: RawRequest): Promise<RawAnswer & { reusedSocket: boolean }> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...raw.headers };
      if (raw.body && !raw.chunked) headers['content-length'] = String(raw.body.length);
      if (raw.chunked) headers['transfer-encoding'] = 'chunked';
      let answered = false;
      const req = request({ host: hostname, port, method: raw.method, path: raw.path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          answered = true;
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'],
            text: Buffer.concat(chunks).toString('utf8'),
            reusedSocket: req.reusedSocket,
          });
        });
      });
      req.setTimeout(ANSWER_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)));
      // The daemon may answer (401, 413) and close before the whole body is written: what counts is the answer.
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (!answered) reject(Object.assign(error, { reusedSocket: req.reusedSocket }));
      });
      if (raw.body && raw.chunked) {
        for (let offset = 0; offset < raw.body.length; offset += CHUNK) req.write(raw.body.subarray(offset, offset + CHUNK));
        req.end();
      } else {
        req.end(raw.body);
      }
    });

  return {
    async send(raw: RawRequest): Promise<RawAnswer> {
      try {
        return await attempt(raw);
      } catch (error) {
        if ((error as { reusedSocket?: boolean }).reusedSocket) return attempt(raw);
        throw error;
      }
    },
    close: () => agent.destroy(),
  };
}

/** A hash of every file under `dir` by relative path (the lock file excepted: it holds only the PID). */
export function snapshotDataDir(dir: string): Map<string, string> {
  const hashes = new Map<string, string>();
  const walk = (relative: string) => {
    for (const entry of readdirSync(join(dir, relative), { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        hashes.set(`${path}/`, 'directory');
        walk(path);
      } else if (path !== 'daemon.lock') {
        hashes.set(path, createHash('sha1').update(readFileSync(join(dir, path))).digest('hex'));
      }
    }
  };
  walk('');
  return hashes;
}

/**
 * Waits until no file of `dir` changes for `quietMs`: writes that follow an
 * answer (an outbox journal entry after an in-process delivery) end first.
 */
export async function settledSnapshot(dir: string, quietMs = 300, timeoutMs = 10_000): Promise<Map<string, string>> {
  const deadline = Date.now() + timeoutMs;
  let last = snapshotDataDir(dir);
  let quietSince = Date.now();
  while (Date.now() - quietSince < quietMs) {
    if (Date.now() > deadline) throw new Error(`${dir} still changes after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const next = snapshotDataDir(dir);
    if (changedFiles(last, next).length > 0) quietSince = Date.now();
    last = next;
  }
  return last;
}

/** The files that differ between two snapshots: added, removed or changed. */
export function changedFiles(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed = [...after].filter(([path, hash]) => before.get(path) !== hash).map(([path]) => path);
  const removed = [...before.keys()].filter((path) => !after.has(path));
  return [...changed, ...removed];
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where a value sits in a JSON document: object keys and array indices. */
export type JsonPath = (string | number)[];

/** Every path in `value` that leads to an object member or an array element, outermost first. */
export function memberPaths(value: Json, prefix: JsonPath = []): JsonPath[] {
  if (value === null || typeof value !== 'object') return [];
  const children: [string | number, Json][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  return children.flatMap(([member, child]) => [[...prefix, member], ...memberPaths(child, [...prefix, member])]);
}

/** Every path in `value` that leads to an object, the whole value (`[]`) included. */
export function objectPaths(value: Json): JsonPath[] {
  const isObject = (candidate: Json): candidate is { [key: string]: Json } =>
    candidate !== null && typeof candidate === 'object' && !Array.isArray(candidate);
  return [[], ...memberPaths(value)].filter((path) => isObject(valueAt(value, path)));
}

export function valueAt(value: Json, path: JsonPath): Json {
  return path.reduce<Json>((current, member) => (current as Record<string | number, Json>)[member]!, value);
}

/**
 * The JSON text of `value` with the value at `path` written as `replacement`
 * returns it (raw JSON text, so that it can hold what JSON.stringify cannot:
 * duplicate keys, `__proto__` members, 10,000 levels of nesting). A
 * replacement of `undefined` removes the member.
 */
export function rewrite(value: Json, path: JsonPath, replacement: (original: Json) => string | undefined): string {
  if (path.length === 0) return replacement(value) ?? '';
  const [member, ...rest] = path;
  if (Array.isArray(value)) {
    const items = value.map((item, index) => (index === member ? rewrite(item, rest, replacement) : JSON.stringify(item)));
    return `[${items.filter((item) => item !== '').join(',')}]`;
  }
  const object = value as { [key: string]: Json };
  const members = Object.keys(object).flatMap((key) => {
    if (key !== member) return [`${JSON.stringify(key)}:${JSON.stringify(object[key])}`];
    const text = rest.length === 0 ? replacement(object[key]!) : rewrite(object[key]!, rest, replacement);
    return text === undefined || text === '' ? [] : [`${JSON.stringify(key)}:${text}`];
  });
  return `{${members.join(',')}}`;
}

/** `{…}` with `members` (raw JSON text) written first. */
export const withLeadingMembers = (object: Json, members: string) => {
  const text = JSON.stringify(object);
  return text === '{}' ? `{${members}}` : `{${members},${text.slice(1)}`;
};

/** A key spelt with a \u escape for its first character: the same key to JSON, another string to a naive comparison. */
export const escapedKey = (key: string) =>
  `"\\u${key.charCodeAt(0).toString(16).padStart(4, '0')}${JSON.stringify(key.slice(1)).slice(1, -1)}"`;

export const deepArrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
export const deepObjects = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
