import { call } from './api';

/** Which dead letters: those of a workspace, an event key, an extension (each optional). */
export interface DeadLetterFilter {
  workspaceId?: string;
  eventKey?: string;
  extensionKey?: string;
}

export interface ReplayProgress {
  /** Matching dead letters when the replay began. */
  total: number;
  replayed: number;
  /** Matching ones whose subscriber is gone or disabled: they stay dead letters. */
  skipped: number;
  done: boolean;
}

/** Dead letters replayed per request: small enough for the progress to move, large enough to stay few requests. */
const BATCH = 50;

/**
 * Replays the matching dead letters in batches, oldest first, reporting after
 * each. It stops at the number that could be replayed when it began, so that
 * a replay failing again (its dead letter comes back) is not replayed twice.
 */
export async function replayMatching(
  filter: DeadLetterFilter,
  total: number,
  report: (progress: ReplayProgress) => void,
): Promise<ReplayProgress> {
  const progress: ReplayProgress = { total, replayed: 0, skipped: 0, done: false };
  for (;;) {
    const left = total - progress.skipped - progress.replayed;
    const batch = Math.min(BATCH, left);
    if (batch <= 0) break;
    const { data: answer } = await call('replayDeadLetters', { body: { ...filter, limit: batch } });
    progress.replayed += answer.replayed;
    // Every request counts all the matching dead letters it had to skip, not only this batch's.
    progress.skipped = answer.skipped;
    report({ ...progress });
    if (answer.replayed < batch) break;
  }
  progress.done = true;
  report({ ...progress });
  return progress;
}

/** How a replay of one dead letter ended: delivered (the letter is gone) or dead again. */
export type ReplayOutcome = 'delivered' | 'failed';

/** How often a replay in flight is checked. */
const FOLLOW_MS = 1000;

/**
 * Follows one replayed dead letter, about once a second while its delivery is
 * queued. Answers null when `signal` aborts first (the page was left).
 */
export async function followReplay(id: string, signal: AbortSignal): Promise<ReplayOutcome | null> {
  while (!signal.aborted) {
    const { data } = await call('getDeadLetterState', { params: { id } });
    if (data.state === 'gone') return 'delivered';
    if (data.state === 'dead') return 'failed';
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
  }
  return null;
}

/** The page of a dead letter's event, where its deliveries are. */
export const eventPath = (event: { tenantId: string; id: string }) =>
  `/workspaces/${encodeURIComponent(event.tenantId)}/events/${encodeURIComponent(event.id)}`;

// A delivered replay leaves no dead letter behind, and `gone` also means discarded:
// the tab remembers which letters it replayed, so that a reload can say what happened.
const REMEMBERED = 'platform.replayed.';
export function rememberReplay(id: string, event: { tenantId: string; id: string }): void {
  try {
    sessionStorage.setItem(REMEMBERED + id, eventPath(event));
  } catch {
    // Storage may be unavailable; the page then only shows that the letter is not found.
  }
}
export function replayedEvent(id: string): string | null {
  try {
    return sessionStorage.getItem(REMEMBERED + id);
  } catch {
    return null;
  }
}
