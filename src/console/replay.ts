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
