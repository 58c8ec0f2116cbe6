import { freePort } from '../../dev/embedded-postgres.js';

/** A loopback port free a moment ago, for a daemon the test tells to listen there (so that it can connect before the start line). */
export { freePort };

/** A local port that nothing listens on (it was free a moment ago): connections to it are refused. */
export const closedPort: () => Promise<number> = freePort;
