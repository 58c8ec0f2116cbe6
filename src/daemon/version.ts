import { createRequire } from 'node:module';

// src/daemon and dist/daemon are both two levels below package.json.
const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

/** This daemon's platform version, compared with a version's requiresPlatform. */
export const PLATFORM_VERSION: string = pkg.version;
