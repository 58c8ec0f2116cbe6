import type { Command } from 'commander';
import { withExample } from '../help.js';
import { ApiError } from '../../contract/client.js';
import type { Envelope, ErrorMeta } from '../../contract/types.js';
import { clientFor } from '../client.js';
import { CliError, EXIT } from '../errors.js';
import { printLine } from '../output.js';

interface StreamItem {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

/** Reconnecting waits this long at first, doubling up to the maximum while the daemon stays away. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5_000;

/** Registers `events tail` on the `events` command. */
export function registerEventsTail(events: Command): void {
  withExample(
    events
      .command('tail <workspace>')
      .description('follow the live events, delivery outcomes and subscriptions enabled or disabled in a workspace until Ctrl-C; reconnects when the daemon restarts'),
    'platform events tail acme --event crm.deal.closed',
  )
    .option('--event <eventKey>', 'only this event key')
    .option('--json', 'print one JSON object per line')
    .action(async (workspace: string, flags: { event?: string; json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const stop = new AbortController();
      process.once('SIGINT', () => {
        stop.abort();
        process.exit(EXIT.ok);
      });
      const print = (item: StreamItem) => {
        if (flags.event !== undefined && item.data.eventKey !== flags.event) return;
        if (flags.json) printLine(JSON.stringify(item));
        else printLine(describe(workspace, item, (eventId) => client.urlOf('getEvent', { params: { id: workspace, eventId } })));
      };
      await follow(client.href('streamWorkspace', { params: { id: workspace } }), client.token, stop.signal, print);
    });
}

/** Reads the stream, and on every disconnect connects again with the last id seen. */
async function follow(streamUrl: string, token: string | null, signal: AbortSignal, print: (item: StreamItem) => void): Promise<void> {
  let lastEventId: string | null = null;
  let retryMs = FIRST_RETRY_MS;
  let announced = false;
  for (;;) {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (lastEventId !== null) headers['last-event-id'] = lastEventId;
    try {
      const response = await fetch(streamUrl, { headers, signal });
      if (!response.ok || !response.body) throw await refusal(response);
      retryMs = FIRST_RETRY_MS;
      if (!announced) process.stderr.write(`following ${streamUrl} (Ctrl-C to stop)\n`);
      announced = true;
      for await (const item of readEvents(response.body)) {
        lastEventId = item.id;
        print(item);
      }
    } catch (error) {
      if (error instanceof CliError || error instanceof ApiError) throw error;
      // The daemon went away (a restart, a network hiccup): connect again below.
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  }
}

/** A refused stream (401, 403, 404, …) is not retried: the envelope says why. */
async function refusal(response: Response): Promise<ApiError | CliError> {
  const text = await response.text().catch(() => '');
  try {
    const envelope = JSON.parse(text) as Envelope<null>;
    return new ApiError(envelope.message ?? envelope.code, envelope.code, response.status, envelope.meta as ErrorMeta | null);
  } catch {
    return new CliError(`the daemon answered ${response.status} without a platform envelope`, EXIT.daemonError);
  }
}

/** Server-sent events: `id:`, `event:` and `data:` lines, a blank line ends an item, `:` lines are comments. */
async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamItem> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id = '';
  let type = 'message';
  let data = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (line === '') {
        if (data !== '') yield { id, type, data: JSON.parse(data) as Record<string, unknown> };
        type = 'message';
        data = '';
      } else if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) type = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
  }
}

/** One line per item; `eventPath` is where the event itself is read. */
function describe(workspace: string, { type, data }: StreamItem, eventPath: (eventId: string) => string): string {
  const time = new Date().toISOString().slice(11, 19);
  if (type === 'event.published') {
    const line = `${time}  published  ${String(data.eventKey)}  ${String(data.id)}  by ${String(data.actor)}`;
    if (typeof data.payloadBytes !== 'number') return line;
    // Streams carry a payload up to 16 KiB only; the event itself has it.
    const id = String(data.id);
    return `${line}  (payload of ${data.payloadBytes} bytes not sent live: platform events show ${workspace} ${id}, or GET ${eventPath(id)})`;
  }
  if (type === 'subscription.changed') {
    const state = data.enabled === true ? 'enabled' : `disabled: ${String(data.disabledReason)}`;
    return `${time}  subscription  ${String(data.eventKey)} -> ${String(data.extensionKey)}  ${String(data.subscriptionId)}  ${state}`;
  }
  const outcome = type.replace('delivery.', '');
  const detail = [
    `attempt ${String(data.attempts)}`,
    data.httpStatus === undefined ? null : `HTTP ${String(data.httpStatus)}`,
    data.error === undefined ? null : String(data.error),
    data.nextAttemptAt === undefined ? null : `next at ${String(data.nextAttemptAt)}`,
  ].filter((part) => part !== null);
  return `${time}  ${outcome}  ${String(data.eventKey)}  ${String(data.eventId)} -> ${String(data.extensionKey)}  ${detail.join(', ')}`;
}
