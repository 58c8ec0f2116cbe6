import type { Command } from 'commander';

/** The help text that ends a command's help: `.addHelpText('after', examples('platform ...'))`. */
export const examples = (...lines: string[]) => `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((line) => `  $ ${line}`).join('\n')}`;

/** Ends a command's help with examples; every command that runs something has one. */
export function withExample<C extends Command>(command: C, ...lines: string[]): C {
  command.addHelpText('after', examples(...lines));
  return command;
}

/** `platform events publish`: the words that name a command. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current; current = current.parent) names.unshift(current.name());
  return names.join(' ');
}

export function* walk(command: Command): Generator<Command> {
  yield command;
  for (const child of command.commands) yield* walk(child);
}

/**
 * Settings every command shares, applied once the tree is built: a usage
 * error prints one line and where to read more (not the whole help), and
 * required options say so in the help.
 */
export function finishCommandTree(program: Command): void {
  for (const command of walk(program)) {
    command.showHelpAfterError(`(run '${commandPath(command)} --help')`);
    // Commander's suggestions also fire for unrelated words (`bogus` -> `logout`).
    command.showSuggestionAfterError(false);
    // One way to ask for help below the top: `platform help ext list` or `platform ext list --help`.
    if (command.parent) command.helpCommand(false);
    for (const option of command.options) {
      if (option.mandatory && !option.description.endsWith('(required)')) option.description += ' (required)';
    }
  }
}
