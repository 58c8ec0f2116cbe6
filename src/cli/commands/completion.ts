import type { Command } from 'commander';
import { usageError } from '../errors.js';
import { commandPath, walk, withExample } from '../help.js';
import { printLine } from '../output.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;

interface Node {
  /** Words after `platform`, e.g. `ext config`. */
  path: string;
  subcommands: string[];
  options: string[];
}

/** The command tree as the completion scripts need it; read from commander, so it never drifts. */
function treeOf(program: Command): Node[] {
  return [...walk(program)].map((command) => ({
    path: commandPath(command).split(' ').slice(1).join(' '),
    subcommands: command.commands.map((child) => child.name()),
    options: [...command.options.flatMap((option) => [option.long, option.short]), '--help'].filter((flag): flag is string => Boolean(flag)),
  }));
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

function bashScript(tree: Node[]): string {
  const cases = (pick: (node: Node) => string[]) =>
    tree.map((node) => `    ${quote(node.path)}) echo ${quote(pick(node).join(' '))} ;;`).join('\n');
  return `# platform completion for bash: source <(platform completion bash)
_platform_commands() {
  case "$1" in
${cases((node) => node.subcommands)}
  esac
}
_platform_options() {
  case "$1" in
${cases((node) => node.options)}
  esac
}
_platform() {
  local path="" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    [[ $word == -* ]] && continue
    if [[ " $(_platform_commands "$path") " == *" $word "* ]]; then path="\${path:+$path }$word"; fi
  done
  local current=\${COMP_WORDS[COMP_CWORD]}
  if [[ $current == -* ]]; then
    COMPREPLY=($(compgen -W "$(_platform_options "$path")" -- "$current"))
  else
    COMPREPLY=($(compgen -W "$(_platform_commands "$path")" -- "$current"))
  fi
}
complete -F _platform platform
`;
}

function fishScript(tree: Node[]): string {
  const lines = ['# platform completion for fish: platform completion fish | source', 'complete -c platform -f'];
  for (const node of tree) {
    const words = node.path ? node.path.split(' ') : [];
    const inside = words.map((word) => `__fish_seen_subcommand_from ${word}`);
    const notDeeper = node.subcommands.length > 0 ? [`not __fish_seen_subcommand_from ${node.subcommands.join(' ')}`] : [];
    const here = (words.length === 0 ? ['__fish_use_subcommand'] : [...inside, ...notDeeper]).join('; and ');
    if (node.subcommands.length > 0) lines.push(`complete -c platform -n ${quote(here)} -a ${quote(node.subcommands.join(' '))}`);
    for (const option of node.options.filter((flag) => flag.startsWith('--'))) {
      lines.push(`complete -c platform -n ${quote(words.length === 0 ? '__fish_use_subcommand' : inside.join('; and '))} -l ${option.slice(2)}`);
    }
  }
  return lines.join('\n') + '\n';
}

export function registerCompletion(program: Command): void {
  withExample(
    program
      .command('completion <shell>')
      .description('print a shell completion script for commands, subcommands and options (bash, zsh or fish)'),
    'source <(platform completion bash)      # in ~/.bashrc',
    'source <(platform completion zsh)       # in ~/.zshrc',
    'platform completion fish > ~/.config/fish/completions/platform.fish',
  ).action((shell: string) => {
    if (!(SHELLS as readonly string[]).includes(shell)) throw usageError(`no completion for ${shell}: choose ${SHELLS.join(', ')}`);
    const tree = treeOf(program);
    if (shell === 'fish') return void process.stdout.write(fishScript(tree));
    // zsh runs the bash script through its bash compatibility layer.
    if (shell === 'zsh') printLine('autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit');
    process.stdout.write(bashScript(tree));
  });
}
