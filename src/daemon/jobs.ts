import { describeFault } from './errors.js';
import type { Logger } from './log.js';

export interface ScheduledJob {
  name: string;
  /** Milliseconds between two runs: the job's interval setting. */
  intervalMs: number;
  run: () => Promise<unknown>;
}

/** How a scheduled run ended: it ran, it threw, or another daemon was running the job. */
export type JobOutcome = 'succeeded' | 'failed' | 'skipped';

export interface JobRunner {
  stop(): Promise<void>;
}

/**
 * What makes a job's run the only one: several daemons on one PostgreSQL
 * schema each schedule every job, and one of them at a time runs it. On files
 * one daemon owns the data directory, and there is nothing to take.
 */
export interface JobLock {
  /** Runs `work` unless another daemon is running this job now; answers whether it ran. */
  runAlone(jobName: string, work: () => Promise<unknown>): Promise<boolean>;
}

/** The n-th job of the list runs n × 15 s past each multiple of its interval, so that jobs sharing an interval do not all start at once. */
const PHASE_STEP_MS = 15_000;

/**
 * Starts the background jobs. A job runs at the multiples of its interval on
 * the wall clock (shifted by its phase), so that every daemon sharing a
 * database aims at the same instants and the JobLock lets one of them run.
 * The next run is scheduled when a run ends: runs of a job never overlap,
 * and one that outlasts its interval skips the instants it missed. A run
 * that throws is logged once, by name, and the job runs again at its next
 * instant. stop() cancels what is scheduled and waits for runs in progress.
 */
export function startJobs(
  jobs: ScheduledJob[],
  lock: JobLock,
  logger: Logger,
  onRun: (jobName: string, outcome: JobOutcome) => void = () => undefined,
): JobRunner {
  let stopped = false;
  const timers = new Map<string, NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  const failing = new Set<string>();

  const runOnce = async (job: ScheduledJob): Promise<void> => {
    let outcome: JobOutcome;
    try {
      outcome = (await lock.runAlone(job.name, job.run)) ? 'succeeded' : 'skipped';
      if (outcome === 'skipped') logger.debug(`job ${job.name} skipped: another daemon is running it`);
      else if (failing.delete(job.name)) logger.info(`job ${job.name} succeeded again`);
    } catch (error) {
      outcome = 'failed';
      failing.add(job.name);
      logger.error(`job ${job.name} failed: ${describeFault(error)}`);
    }
    onRun(job.name, outcome);
  };

  const schedule = (job: ScheduledJob, phaseMs: number, after: number) => {
    if (stopped) return;
    // From the instant just served at least: a timer that fires a little early must not run the job twice for it.
    const at = nextRunAt(Math.max(Date.now(), after), job.intervalMs, phaseMs);
    const timer = setTimeout(() => {
      const run = runOnce(job).finally(() => {
        running.delete(run);
        schedule(job, phaseMs, at);
      });
      running.add(run);
    }, at - Date.now());
    // Jobs never keep the process alive on their own.
    timer.unref();
    timers.set(job.name, timer);
  };

  jobs.forEach((job, index) => schedule(job, index * PHASE_STEP_MS, 0));
  return {
    async stop() {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
      await Promise.all(running);
    },
  };
}

/** The first instant after `now` that is a multiple of the interval (since the epoch) plus the phase. */
function nextRunAt(now: number, intervalMs: number, phaseMs: number): number {
  const phase = phaseMs % intervalMs;
  return Math.floor((now - phase) / intervalMs) * intervalMs + phase + intervalMs;
}
