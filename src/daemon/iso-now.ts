// Under load many log lines and answers share a millisecond: its ISO form is made once.
let stampedAt = 0;
let stamp = '';

/** The current time as an ISO 8601 string, to the millisecond. */
export function isoNow(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = new Date(now).toISOString();
  }
  return stamp;
}
