import type { DaemonConfig, ServeFlags } from '../daemon/config.js';
import { usageError } from './errors.js';

/**
 * The daemon's configuration from flags and environment, for the commands that
 * run daemon code in this process (serve, keys rotate, offline password reset).
 * A bad setting is a usage error. Loaded on demand: other commands never pay for the daemon's modules.
 */
export async function daemonConfig(flags: ServeFlags): Promise<DaemonConfig> {
  const { resolveConfig, ConfigError } = await import('../daemon/config.js');
  try {
    return resolveConfig(flags);
  } catch (error) {
    if (error instanceof ConfigError) throw usageError(error.message);
    throw error;
  }
}
