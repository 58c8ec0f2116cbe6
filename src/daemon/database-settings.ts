/** How the daemon reaches PostgreSQL: kept apart from store/postgres so that reading the configuration loads no backend (nor pg). */

export interface DatabaseSettings {
  /** postgres:// URL; may hold a password, so it is never logged or shown as is (see redactUrl). */
  url: string;
  /** Every table of the platform lives in this schema (`platform`, or --database-schema). */
  schema: string;
}

/** The URL with its password (in the authority or as a parameter) replaced by ***, fit for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return '(an unreadable URL)';
  }
}
