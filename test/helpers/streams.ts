import { spawn } from 'node:child_process';
import { request, type IncomingMessage } from 'node:http';
import { PLATFORM_BIN } from './cli.js';
import { waitFor } from './wait.js';

export interface Item {
  id: number;
  event: string;
  data: any;
}

/** A live stream read with node:http, so that a test can stop reading it. */
export interface Stream {
  status: number;
  items: Item[];
  comments: string[];
  text(): string;
  /** Set when the server ended the response; `clean` unless the connection broke. */
  ended?: { clean: boolean };
  response: IncomingMessage;
  close(): void;
}

export const endOf = (stream: Stream) => waitFor('the end of the stream', () => stream.ended);

export function openStream(url: string, path: string, token: string, lastEventId?: number | string, read = true): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
    const req = request(url + path, { headers }, (response) => {
      let raw = '';
      let buffer = '';
      const items: Item[] = [];
      const comments: string[] = [];
      const stream: Stream = {
        status: response.statusCode ?? 0,
        items,
        comments,
        text: () => raw,
        response,
        close: () => req.destroy(),
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        raw += chunk;
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) comments.push(block.slice(1).trim());
          else {
            const field = (name: string) => block.split('\n').find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
            items.push({ id: Number(field('id')), event: field('event') as string, data: JSON.parse(field('data') as string) });
          }
        }
      });
      response.on('end', () => (stream.ended ??= { clean: true }));
      response.on('error', () => (stream.ended ??= { clean: false }));
      response.on('aborted', () => (stream.ended ??= { clean: false }));
      if (!read) response.pause();
      resolve(stream);
    });
    req.on('error', reject);
    req.end();
  });
}

/** `platform events tail` as a process, with what it printed so far; connected once it says it follows. */
export async function tail(url: string, token: string, args: string[]) {
  const env = { PATH: process.env.PATH ?? '', HOME: '/nonexistent', PLATFORM_URL: url, PLATFORM_TOKEN: token };
  const child = spawn(process.execPath, [PLATFORM_BIN, 'events', 'tail', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    await waitFor('tail connected', () => output.stderr.includes('following') || undefined);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return { output, env, exited, kill: (signal: NodeJS.Signals) => child.kill(signal) };
}
export type Tail = Awaited<ReturnType<typeof tail>>;
