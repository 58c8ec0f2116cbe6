import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { unavailable } from '../errors.js';

type PasswordJob =
  | { id: number; op: 'hash'; password: string; cost: number }
  | { id: number; op: 'verify'; password: string; hash: string };

type PasswordResult = { id: number; value: string | boolean } | { id: number; error: string };

/**
 * The worker is a plain CommonJS script (not a module file) so that it runs the
 * same from the TypeScript sources and from dist/. A hash costs ~70 ms of CPU:
 * the thread lowers its own priority (Linux: setpriority on the thread id) so
 * that a stream of logins does not take the CPU from the event loop.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');
const bcrypt = require(workerData.bcryptPath);
try {
  const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(threadId)) setPriority(threadId, 10);
} catch {}
parentPort.on('message', (job) => {
  let reply;
  try {
    const value = job.op === 'hash' ? bcrypt.hashSync(job.password, job.cost) : bcrypt.compareSync(job.password, job.hash);
    reply = { id: job.id, value };
  } catch (error) {
    reply = { id: job.id, error: error instanceof Error ? error.message : 'bcrypt failed' };
  }
  parentPort.postMessage(reply);
});
`;

const bcryptPath = createRequire(import.meta.url).resolve('bcryptjs');

interface Pending {
  worker: Worker;
  resolve: (value: string | boolean) => void;
  reject: (error: Error) => void;
}

type Job = PasswordJob extends infer J ? (J extends { id: number } ? Omit<J, 'id'> : never) : never;

/** More queued hashes than this are refused (503) instead of growing the queue without end. */
const MAX_QUEUED = 256;

/**
 * bcrypt (bcryptjs) on worker threads. Both hashing and comparison run off the
 * event loop, so a burst of logins delays only other logins.
 */
export class PasswordHasher {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    readonly cost: number,
    size = Math.max(1, Math.min(4, availableParallelism())),
  ) {
    for (let i = 0; i < size; i += 1) this.spawn();
  }

  hash(password: string): Promise<string> {
    return this.run({ op: 'hash', password, cost: this.cost }) as Promise<string>;
  }

  verify(password: string, hash: string): Promise<boolean> {
    return this.run({ op: 'verify', password, hash }) as Promise<boolean>;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map((worker) => worker.terminate()));
    for (const job of this.pending.values()) job.reject(unavailable('shutting down'));
    this.pending.clear();
  }

  private run(job: Job): Promise<string | boolean> {
    if (this.closed) return Promise.reject(unavailable('shutting down'));
    if (this.pending.size >= MAX_QUEUED) return Promise.reject(unavailable('too many password checks queued; retry shortly'));
    const worker = this.leastLoaded();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject });
      worker.postMessage({ ...job, id } satisfies PasswordJob);
    });
  }

  private leastLoaded(): Worker {
    const load = new Map(this.workers.map((worker) => [worker, 0]));
    for (const job of this.pending.values()) load.set(job.worker, (load.get(job.worker) ?? 0) + 1);
    let best = this.workers[0]!;
    for (const [worker, jobs] of load) if (jobs < load.get(best)!) best = worker;
    return best;
  }

  private spawn(): void {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { bcryptPath } });
    worker.unref();
    worker.on('message', (reply: PasswordResult) => {
      const job = this.pending.get(reply.id);
      if (!job) return;
      this.pending.delete(reply.id);
      if ('error' in reply) job.reject(new Error(reply.error));
      else job.resolve(reply.value);
    });
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      const index = this.workers.indexOf(worker);
      if (index >= 0) this.workers.splice(index, 1);
      for (const [id, job] of this.pending) {
        if (job.worker !== worker) continue;
        this.pending.delete(id);
        job.reject(new Error('password worker stopped'));
      }
      if (!this.closed) this.spawn();
    });
    this.workers.push(worker);
  }
}
