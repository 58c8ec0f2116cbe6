/**
 * Exit codes of the contract: 0 ok, 1 the daemon answered an error (or a confirmation was declined), 2 usage, 3 unreachable;
 * and 130 (128 + SIGINT, as shells report Ctrl-C) when a prompt was left with Ctrl-C or Ctrl-D.
 */
export const EXIT = { ok: 0, daemonError: 1, declined: 1, usage: 2, unreachable: 3, interrupted: 130 } as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage);

/** The user left a prompt (Ctrl-C, or Ctrl-D closing the terminal's input): nothing to say, nothing was sent. */
export class Interrupted extends CliError {
  constructor() {
    super('interrupted', EXIT.interrupted);
  }
}
