import { CronJob } from 'cron';
import { describeFault } from './errors.js';
import type { Logger } from './log.js';

export interface ScheduledJob {
  name: string;
  /** Six-field cron expression (seconds first). */
  cronTime: string;
  run: () => Promise<unknown>;
}

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

/** Starts the background jobs; stop() waits for a run in progress to finish. */
export function startJobs(jobs: ScheduledJob[], lock: JobLock, logger: Logger): JobRunner {
  const running = new Set<Promise<unknown>>();
  const crons = jobs.map((job) =>
    CronJob.from({
      cronTime: job.cronTime,
      start: true,
      waitForCompletion: true,
      unrefTimeout: true,
      onTick: async () => {
        const run = lock
          .runAlone(job.name, job.run)
          .then((ran) => {
            if (!ran) logger.debug(`job ${job.name} skipped: another daemon is running it`);
          })
          .catch((error: unknown) => {
            logger.error(`job ${job.name} failed: ${describeFault(error)}`);
          });
        running.add(run);
        await run;
        running.delete(run);
      },
    }),
  );
  return {
    async stop() {
      for (const cron of crons) void cron.stop();
      await Promise.all(running);
    },
  };
}
