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

/** Starts the background jobs; stop() waits for a run in progress to finish. */
export function startJobs(jobs: ScheduledJob[], logger: Logger): JobRunner {
  const running = new Set<Promise<unknown>>();
  const crons = jobs.map((job) =>
    CronJob.from({
      cronTime: job.cronTime,
      start: true,
      waitForCompletion: true,
      unrefTimeout: true,
      onTick: async () => {
        const run = job.run().catch((error: unknown) => {
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
