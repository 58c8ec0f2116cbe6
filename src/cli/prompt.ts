import { CliError, EXIT, Interrupted, usageError } from './errors.js';

/** Prompts need a terminal to read from; without one, missing input is a usage error. */
export const isInteractive = () => Boolean(process.stdin.isTTY);

/**
 * Prompts go to the terminal even when stdout is redirected (`platform ... > file`):
 * then they are written to stderr, so nobody waits on a question they cannot see.
 */
async function prompt<T>(question: Record<string, unknown>): Promise<T> {
  const inquirer = (await import('inquirer')).default;
  const output = process.stdout.isTTY ? process.stdout : process.stderr;
  try {
    const answers = await inquirer.createPromptModule({ output })([{ name: 'value', ...question }] as never);
    return (answers as { value: T }).value;
  } catch (error) {
    // Inquirer rejects with an error named ExitPromptError (its class is not exported) on Ctrl-C, and on
    // Ctrl-D once nothing else keeps the process alive: the user chose to stop, which is no error.
    if (error instanceof Error && error.name === 'ExitPromptError') throw new Interrupted();
    throw error;
  }
}

/** Asks for a value on a TTY; without one, a missing value is a usage error naming `flag`. */
export async function askText(message: string, flag: string, validate?: (value: string) => true | string): Promise<string> {
  if (!isInteractive()) throw usageError(`missing ${flag}`);
  return prompt<string>({ type: 'input', message, validate: (input: string) => validate?.(input) ?? true });
}

export async function askSecret(message: string, flag: string, validate?: (value: string) => true | string): Promise<string> {
  if (!isInteractive()) throw usageError(`missing ${flag}`);
  return prompt<string>({ type: 'password', mask: '*', message, validate: (input: string) => validate?.(input) ?? true });
}

/**
 * The one gate of destructive commands: --yes, else a question on a terminal
 * (declining exits 1, nothing changed), else a usage error saying --yes is needed.
 */
export async function confirmOrStop(question: string, flags: { yes?: boolean }): Promise<void> {
  if (flags.yes) return;
  if (!isInteractive()) throw usageError(`${question.replace(/\?$/, '')}: without a terminal to ask on, pass --yes to confirm`);
  const ok = await prompt<boolean>({ type: 'confirm', message: question, default: false });
  if (!ok) throw new CliError('cancelled; nothing was changed', EXIT.declined);
}

/** Reads all of stdin (for --password-stdin and payloads); trailing newlines dropped. */
export async function readStdin(what = 'input'): Promise<string> {
  // A terminal on stdin waits for typing: say so, or the command looks hung.
  if (process.stdin.isTTY) process.stderr.write(`reading ${what} from stdin; end it with Ctrl-D\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** Reads stdin as lines, for commands that take more than one secret from it. */
export async function readStdinLines(count: number, what: string): Promise<string[]> {
  const lines = (await readStdin(what)).split(/\r?\n/);
  if (lines.length < count || lines.slice(0, count).some((line) => line === '')) {
    throw usageError(`expected ${what} on stdin, one per line`);
  }
  return lines.slice(0, count);
}
