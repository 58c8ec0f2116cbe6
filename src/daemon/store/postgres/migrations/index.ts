import { sql as auth } from './0001-auth.js';
import { sql as catalog } from './0002-catalog.js';
import { sql as chat } from './0005-chat.js';
import { sql as webhooks } from './0006-webhooks.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Every migration, in order. A migration is never changed once released: a
 * change of schema is a new file with the next number. (TypeScript modules
 * rather than .sql files, so that the build puts them in dist/ with the rest.)
 */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'auth', sql: auth },
  { version: 2, name: 'catalog', sql: catalog },
  { version: 5, name: 'chat', sql: chat },
  { version: 6, name: 'webhooks', sql: webhooks },
];
