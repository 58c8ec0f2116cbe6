import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PLATFORM_BIN } from './helpers/cli.js';
import { filesOnly } from './helpers/postgres.js';

const run = promisify(execFile);
const root = new URL('..', import.meta.url);
const DOCS = ['README.md', ...readdirSync(new URL('docs/', root)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/**
 * `platform` where a shell runs it: at the start of a line, after a pipe, `$(`,
 * `;`, `&&`, `sudo`, `npx` or a path ending in /bin/. Its words run to the end
 * of that command (a pipe, `;`, `&`, `)`, a redirection, a comment).
 */
const INVOCATION = /(?:^\s*(?:\$ )?|[|;(&]\s*|\bsudo (?:-u \S+ )?|\bnpx |\/bin\/)platform ((?:[^\n|;&)>`#]|#(?! ))*)/gm;

/** Every `platform …` command the docs show: in code blocks, and in inline code of the prose. */
function documentedCommands(): Array<{ file: string; command: string }> {
  const found: Array<{ file: string; command: string }> = [];
  for (const file of DOCS) {
    const text = readFileSync(new URL(file, root), 'utf8');
    const blocks = [...text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((match) => match[1]!.replace(/\\\n\s*/g, ' '));
    const prose = text.replace(/```[a-z]*\n[\s\S]*?```/g, '');
    const spans = [...prose.matchAll(/`(platform [^`]+)`/g)].map((match) => match[1]!.replace(/\s*\n\s*/g, ' '));
    for (const piece of [...blocks, ...spans]) {
      for (const match of piece.matchAll(INVOCATION)) found.push({ file, command: match[1]!.trim() });
    }
  }
  return found;
}

/** Words as a shell splits them, near enough: quotes group, and are dropped; so are the brackets of a synopsis (`[--out FILE]`). */
const words = (command: string) =>
  [...command.matchAll(/"[^"]*"|'[^']*'|\S+/g)].map((match) => match[0].replace(/^["']|["']$/g, '').replace(/^\[|\]$/g, ''));

/** Options every command takes (the program's, accepted after any subcommand). */
const GLOBAL_OPTIONS = ['--url', '--timeout', '--help', '--version'];

/** The help text depends only on the leading words: one process per distinct command, not per mention. */
const helps = new Map<string, Promise<string>>();
function helpOf(leading: string[]): Promise<string> {
  const key = leading.join(' ');
  let help = helps.get(key);
  if (!help) {
    help = run(process.execPath, [PLATFORM_BIN, ...leading, '--help'], { env: { PATH: process.env.PATH ?? '' } }).then(({ stdout }) => stdout);
    helps.set(key, help);
  }
  return help;
}

async function problemsOf(command: string): Promise<string[]> {
  const all = words(command);
  const firstOption = all.findIndex((word) => word.startsWith('-'));
  const leading = firstOption < 0 ? all : all.slice(0, firstOption);
  // --help shows the help of the deepest command the words name; its Usage line says which that is.
  const help = await helpOf(leading);
  const usage = /^Usage: platform((?: [a-z][\w-]*)*)(.*)$/m.exec(help);
  if (!usage) return [`no usage line in the help of ${leading.join(' ')}`];
  const path = usage[1]!.trim().split(' ').filter(Boolean);
  const rest = leading.slice(path.length);
  const problems: string[] = [];
  if (rest.length > 0 && usage[2]!.includes('[command]')) problems.push(`'platform ${path.join(' ')}' has no command '${rest[0]}'`);
  else if (rest.length > 0 && !/[<[]/.test(usage[2]!.replace('[options]', ''))) problems.push(`'platform ${path.join(' ')}' takes no arguments (got '${rest[0]}')`);
  if (leading.length === 0 && !all.every((word) => GLOBAL_OPTIONS.includes(word) || word === '-V')) problems.push('no command');
  for (const option of all.filter((word) => /^--[a-z]/.test(word)).map((word) => word.replace(/=.*$/, ''))) {
    if (!GLOBAL_OPTIONS.includes(option) && !new RegExp(`(^|[\\s,])${option}\\b(?!-)`, 'm').test(help)) {
      problems.push(`'platform ${path.join(' ')}' has no option ${option}`);
    }
  }
  return problems;
}

// Files only: no daemon takes part, so one pass is enough.
filesOnly(test)('every `platform …` command in README.md and docs/*.md exists, with the options it is shown with (files only: no daemon involved)', async () => {
  const commands = documentedCommands();
  assert.ok(commands.length > 80, `found ${commands.length} commands`);
  const unique = [...new Map(commands.map((entry) => [entry.command, entry])).values()];
  const problems: string[] = [];
  // A few at a time: each is a process.
  for (let start = 0; start < unique.length; start += 4) {
    await Promise.all(
      unique.slice(start, start + 4).map(async ({ file, command }) => {
        for (const problem of await problemsOf(command)) problems.push(`${file}: platform ${command}: ${problem}`);
      }),
    );
  }
  assert.equal(problems.sort(), []);
});

test.run();
