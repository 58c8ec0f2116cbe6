import { sql as auth } from './0001-auth.js';
import { sql as catalog } from './0002-catalog.js';
import { sql as workspaces } from './0003-workspaces.js';
import { sql as extensionConfig } from './0004-extension-config.js';
import { sql as chat } from './0005-chat.js';
import { sql as webhooks } from './0006-webhooks.js';
import { sql as events } from './0007-events.js';

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
  { version: 3, name: 'workspaces', sql: workspaces },
  { version: 4, name: 'extension-config', sql: extensionConfig },
  { version: 5, name: 'chat', sql: chat },
  { version: 6, name: 'webhooks', sql: webhooks },
  { version: 7, name: 'events', sql: events },
];
