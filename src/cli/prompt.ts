import { usageError } from './errors.js';

/** inquirer without a terminal throws and the process would exit 0: prompt only on a TTY. */
export const isInteractive = () => Boolean(process.stdin.isTTY && process.stdout.isTTY);

async function inquirer() {
  return (await import('inquirer')).default;
}

/** Asks for a value on a TTY; without one, a missing value is a usage error naming `flag`. */
export async function askText(message: string, flag: string, validate?: (value: string) => true | string): Promise<string> {
  if (!isInteractive()) throw usageError(`missing ${flag}`);
  const { value } = await (await inquirer()).prompt<{ value: string }>([
    { type: 'input', name: 'value', message, validate: (input: string) => validate?.(input) ?? true },
  ]);
  return value;
}

export async function askSecret(message: string, flag: string, validate?: (value: string) => true | string): Promise<string> {
  if (!isInteractive()) throw usageError(`missing ${flag}`);
  const { value } = await (await inquirer()).prompt<{ value: string }>([
    { type: 'password', name: 'value', mask: '*', message, validate: (input: string) => validate?.(input) ?? true },
  ]);
  return value;
}

export async function confirm(message: string, flag: string): Promise<boolean> {
  if (!isInteractive()) throw usageError(`refusing without confirmation: pass ${flag}`);
  const { ok } = await (await inquirer()).prompt<{ ok: boolean }>([{ type: 'confirm', name: 'ok', message, default: false }]);
  return ok;
}

/** Reads all of stdin (for --password-stdin and payloads); trailing newlines dropped. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** Reads stdin as lines, for commands that take more than one secret from it. */
export async function readStdinLines(count: number, what: string): Promise<string[]> {
  const lines = (await readStdin()).split(/\r?\n/);
  if (lines.length < count || lines.slice(0, count).some((line) => line === '')) {
    throw usageError(`expected ${what} on stdin, one per line`);
  }
  return lines.slice(0, count);
}
