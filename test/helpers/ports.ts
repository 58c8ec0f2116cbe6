import { freePort } from '../../dev/embedded-postgres.js';

/** A local port that nothing listens on (it was free a moment ago): connections to it are refused. */
export const closedPort: () => Promise<number> = freePort;
