import type { Command } from 'commander';
import { clientFor } from '../client.js';
import { usageError } from '../errors.js';
import { choiceFlag } from '../flags.js';
import { withExample } from '../help.js';
import { printJson, printLine, printTable } from '../output.js';
import { askSecret, isInteractive, readStdin } from '../prompt.js';
import type { ConfigFieldType } from '../../contract/types.js';


function parseValue(type: ConfigFieldType, text: string): string | number | boolean {
  if (type === 'NUMBER') {
    const number = Number(text);
    if (text.trim() === '' || !Number.isFinite(number)) throw usageError(`${text} is not a number`);
    return number;
  }
  if (type === 'BOOLEAN') {
    if (!/^(true|false)$/.test(text)) throw usageError('a BOOLEAN is true or false');
    return text === 'true';
  }
  return text;
}

/** `platform ext config get|set|set-secret|unset`, under the `ext` command. */
export function registerExtConfig(ext: Command): void {
  const config = ext.command('config').description("an extension's configuration (ADMIN); SECRET values are never shown");

  withExample(config.command('get <key>').description('every field, SECRET values masked'), 'platform ext config get weather')
    .option('--json', 'print JSON')
    .action(async (key: string, flags: { json?: boolean }, command: Command) => {
      const { fields } = (await clientFor(command).call('getExtensionConfig', { params: { key } })).data;
      if (flags.json) return printJson({ fields });
      printTable(
        fields,
        [
          { header: 'NAME', value: (field) => field.name },
          { header: 'TYPE', value: (field) => field.type },
          { header: 'VALUE', value: (field) => (field.set ? String(field.value) : '(not set)') },
        ],
        `(${key} has no configuration)`,
      );
    });

  withExample(
    config.command('set <key> <name> <value>').description('set a STRING, NUMBER or BOOLEAN field (for secrets use set-secret)'),
    'platform ext config set weather units metric',
    'platform ext config set weather refreshMinutes 15 --type NUMBER',
  )
    .option('--type <type>', 'STRING, NUMBER or BOOLEAN (default: the field\'s current type, else STRING)', choiceFlag(['STRING', 'NUMBER', 'BOOLEAN', 'SECRET']))
    .action(async (key: string, name: string, text: string, flags: { type?: ConfigFieldType }, command: Command) => {
      const client = clientFor(command);
      const requested = flags.type;
      if (requested === 'SECRET') throw usageError('secrets are never taken from the command line: use `platform ext config set-secret`');
      const current = (await client.call('getExtensionConfig', { params: { key } })).data.fields.find((field) => field.name === name);
      if (!requested && current?.type === 'SECRET') throw usageError(`${name} is a SECRET: use \`platform ext config set-secret\``);
      const type = requested ?? current?.type ?? 'STRING';
      await client.call('updateExtensionConfig', { params: { key }, body: { fields: [{ name, type, value: parseValue(type, text) }] } });
      printLine(`set ${key} ${name} (${type})`);
    });

  withExample(
    config.command('set-secret <key> <name>').description('set a SECRET field from a hidden prompt, or from stdin without a terminal'),
    'printf %s "$API_KEY" | platform ext config set-secret weather apiKey',
  ).action(async (key: string, name: string, _flags, command: Command) => {
    const value = isInteractive() ? await askSecret(`${name} for ${key}`, 'the secret on stdin') : await readStdin('the secret');
    if (!value) throw usageError('the secret is empty');
    await clientFor(command).call('updateExtensionConfig', { params: { key }, body: { fields: [{ name, type: 'SECRET', value }] } });
    printLine(`set ${key} ${name} (SECRET)`);
  });

  withExample(
    config.command('unset <key> <name>').description('remove a field, SECRET or not'),
    'platform ext config unset weather units',
  ).action(async (key: string, name: string, _flags, command: Command) => {
    await clientFor(command).call('deleteConfigField', { params: { key, field: name } });
    printLine(`unset ${key} ${name}`);
  });
}
