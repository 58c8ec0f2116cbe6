import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiError } from '../../contract/client.js';
import { clientFor } from '../client.js';
import { CliError, EXIT } from '../errors.js';
import { withExample } from '../help.js';

export function registerOpenApi(program: Command): void {
  withExample(
    program.command('openapi').description("print the daemon's OpenAPI 3.1 document (GET /api/openapi.json; no login needed)"),
    'platform openapi --out platform-openapi.json',
  )
    .option('--out <file>', 'write the document to this file instead of printing it')
    .action(async (flags: { out?: string }, command: Command) => {
      // The document is not wrapped in the envelope: fetched by its URL, without a token (it is public).
      const client = clientFor(command, { token: null });
      const url = client.url;
      let response: Response;
      try {
        response = await fetch(client.href('getOpenApi'), { signal: AbortSignal.timeout(client.timeoutSeconds * 1000) });
      } catch (error) {
        const reason = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
        throw new CliError(`cannot reach the platform daemon at ${url} (${reason}); is \`platform serve\` running?`, EXIT.unreachable);
      }
      const text = await response.text();
      const document = parseJson(text) as { openapi?: unknown; code?: string; message?: string } | null;
      if (!response.ok || typeof document?.openapi !== 'string') {
        throw new ApiError(document?.message ?? `${url} answered ${response.status} without an OpenAPI document`, document?.code ?? 'ERROR', response.status, null);
      }
      const pretty = `${JSON.stringify(document, null, 2)}\n`;
      if (flags.out) await writeFile(flags.out, pretty);
      else process.stdout.write(pretty);
    });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
