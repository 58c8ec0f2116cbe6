import { join } from 'node:path';
import type { DaemonConfig } from './config.js';
import { AuthService } from './auth/service.js';
import { PasswordHasher } from './auth/passwords.js';
import { LoginThrottle } from './auth/throttle.js';
import { TokenService } from './auth/tokens.js';
import { UserStore } from './auth/users.js';
import type { ScheduledJob } from './jobs.js';
import { readOrCreateSecret } from './store/secret-file.js';

/** Every domain service of a running daemon. Route modules take what they need. */
export interface Services {
  auth: AuthService;
}

export interface OpenedServices {
  services: Services;
  jobs: ScheduledJob[];
  /** Flushes every store and stops workers; safe to call once. */
  close(): Promise<void>;
}

export async function openServices(config: DaemonConfig): Promise<OpenedServices> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer();
  };
  try {
    const jwtSecret = config.jwtSecret
      ? Buffer.from(config.jwtSecret)
      : await readOrCreateSecret(join(config.dataDir, 'jwt-secret'), 32);
    const users = await UserStore.open(config.dataDir);
    closers.push(() => users.flush());
    const tokens = await TokenService.open(config.dataDir, jwtSecret, config.tokenTtlSeconds);
    closers.push(() => tokens.flush());
    const passwords = new PasswordHasher(config.bcryptCost);
    closers.push(() => passwords.close());
    const throttle = new LoginThrottle(config.loginThrottle.maxFailures, config.loginThrottle.windowSeconds * 1000);
    const auth = new AuthService(users, tokens, passwords, throttle);

    const jobs: ScheduledJob[] = [
      { name: 'prune-revoked-tokens', cronTime: '0 */10 * * * *', run: () => tokens.pruneExpired() },
      { name: 'prune-login-throttle', cronTime: '30 */5 * * * *', run: async () => throttle.prune() },
    ];
    return { services: { auth }, jobs, close };
  } catch (error) {
    await close();
    throw error;
  }
}
