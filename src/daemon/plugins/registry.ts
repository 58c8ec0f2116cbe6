import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EventHandler, Plugin } from '../../handlers/sdk.js';
import { StartupError } from '../errors.js';
import { ensurePrivateDir } from '../files.js';
import { isPlainObject, SLUG_PATTERN } from '../../contract/schemas.js';

/** A plugin shipped with the daemon, which may receive some events in every workspace. */
export interface BuiltinPlugin extends Plugin {
  receivesEverywhere: readonly string[];
  /** Checks an event of `receivesEverywhere` before it is recorded: throwing refuses the publish, and nothing is recorded. */
  admit?(workspaceId: string, eventKey: string, payload: Record<string, unknown>): Promise<void>;
}

const PLUGIN_FILE = /\.m?js$/;

/** In-process plugins by extension key: the built-ins, then every file of the plugins folder. */
export class PluginRegistry {
  private constructor(
    private readonly plugins: Map<string, Plugin>,
    private readonly everywhere: Map<string, string[]>,
    private readonly admitters: Map<string, BuiltinPlugin[]>,
  ) {}

  static async load(dir: string, builtins: readonly BuiltinPlugin[]): Promise<PluginRegistry> {
    const plugins = new Map<string, Plugin>();
    const everywhere = new Map<string, string[]>();
    const admitters = new Map<string, BuiltinPlugin[]>();
    for (const builtin of builtins) {
      plugins.set(builtin.extensionKey, builtin);
      for (const eventKey of builtin.receivesEverywhere) {
        everywhere.set(eventKey, [...(everywhere.get(eventKey) ?? []), builtin.extensionKey]);
        if (builtin.admit) admitters.set(eventKey, [...(admitters.get(eventKey) ?? []), builtin]);
      }
    }
    await ensurePrivateDir(dir);
    for (const name of (await readdir(dir)).filter((file) => PLUGIN_FILE.test(file)).sort()) {
      const file = join(dir, name);
      const plugin = await importPlugin(file);
      if (plugins.has(plugin.extensionKey)) {
        throw new StartupError(`plugin ${file}: extension ${plugin.extensionKey} already has a plugin`);
      }
      plugins.set(plugin.extensionKey, plugin);
    }
    return new PluginRegistry(plugins, everywhere, admitters);
  }

  get(extensionKey: string): Plugin | undefined {
    return this.plugins.get(extensionKey);
  }

  handlerFor(extensionKey: string, eventKey: string): EventHandler | undefined {
    const events = this.plugins.get(extensionKey)?.events;
    return events && Object.hasOwn(events, eventKey) ? events[eventKey] : undefined;
  }

  declares(extensionKey: string, eventKey: string): boolean {
    return this.handlerFor(extensionKey, eventKey) !== undefined;
  }

  /** Built-ins that get this event in every workspace, without a subscription or an installation. */
  receiversEverywhere(eventKey: string): readonly string[] {
    return this.everywhere.get(eventKey) ?? [];
  }

  /** Lets the built-ins that receive this event everywhere refuse it before it is recorded (they throw). */
  async admit(workspaceId: string, eventKey: string, payload: Record<string, unknown>): Promise<void> {
    for (const builtin of this.admitters.get(eventKey) ?? []) await builtin.admit!(workspaceId, eventKey, payload);
  }

  list(): Plugin[] {
    return [...this.plugins.values()];
  }
}

async function importPlugin(file: string): Promise<Plugin> {
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(file).href)) as { default?: unknown };
  } catch (error) {
    throw new StartupError(`plugin ${file} failed to load: ${error instanceof Error ? error.message : String(error)}`);
  }
  const problem = shapeProblem(module.default);
  if (problem) throw new StartupError(`plugin ${file} is not a valid plugin: ${problem}`);
  return module.default as Plugin;
}

/** What is wrong with a default export, or null when it is a Plugin. */
function shapeProblem(candidate: unknown): string | null {
  if (!isPlainObject(candidate)) return 'the default export must be an object';
  const { extensionKey, events, webhook } = candidate;
  if (typeof extensionKey !== 'string' || !SLUG_PATTERN.test(extensionKey)) {
    return 'extensionKey must be a lowercase extension key';
  }
  if (webhook !== undefined && typeof webhook !== 'function') return 'webhook must be a function';
  if (events === undefined) return null;
  if (!isPlainObject(events)) return 'events must be an object of handlers by event key';
  for (const [eventKey, handler] of Object.entries(events)) {
    if (!isPlainObject(handler) || typeof handler.handle !== 'function') return `events["${eventKey}"].handle must be a function`;
    if (handler.async !== undefined && typeof handler.async !== 'boolean') return `events["${eventKey}"].async must be a boolean`;
  }
  return null;
}
