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
 * the thread takes the lowest priority (Linux: setpriority on the thread id) so
 * that a stream of logins does not take the CPU from the event loop; measured,
 * nice 10 still doubled the p99 of other requests under full load, nice 19 not.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');
const bcrypt = require(workerData.bcryptPath);
try {
  const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(threadId)) setPriority(threadId, 19);
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

/** A worker thread costs about 9 MB: they start with the first job and stop after this long without one. */
const IDLE_MS = 10_000;

/**
 * bcrypt (bcryptjs) on worker threads. Both hashing and comparison run off the
 * event loop, so a burst of logins delays only other logins. Workers start on
 * demand, up to `size`, and all stop once idle.
 */
export class PasswordHasher {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly cost: number,
    private readonly size = Math.max(1, Math.min(4, availableParallelism())),
    private readonly idleMs = IDLE_MS,
  ) {}

  /** Worker threads running now. */
  get threads(): number {
    return this.workers.length;
  }

  hash(password: string): Promise<string> {
    return this.run({ op: 'hash', password, cost: this.cost }) as Promise<string>;
  }

  verify(password: string, hash: string): Promise<boolean> {
    return this.run({ op: 'verify', password, hash }) as Promise<boolean>;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    await Promise.all(this.workers.map((worker) => worker.terminate()));
    for (const job of this.pending.values()) job.reject(unavailable('shutting down'));
    this.pending.clear();
  }

  private run(job: Job): Promise<string | boolean> {
    if (this.closed) return Promise.reject(unavailable('shutting down'));
    if (this.pending.size >= MAX_QUEUED) return Promise.reject(unavailable('too many password checks queued; retry shortly'));
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
    const worker = this.leastLoaded();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject });
      worker.postMessage({ ...job, id } satisfies PasswordJob);
    });
  }

  /** An idle worker, else a new one while under `size`, else the least busy. */
  private leastLoaded(): Worker {
    const load = new Map(this.workers.map((worker) => [worker, 0]));
    for (const job of this.pending.values()) load.set(job.worker, (load.get(job.worker) ?? 0) + 1);
    let best = this.workers[0];
    for (const [worker, jobs] of load) if (best === undefined || jobs < load.get(best)!) best = worker;
    if (best !== undefined && (load.get(best) === 0 || this.workers.length >= this.size)) return best;
    return this.spawn();
  }

  /** Once nothing is pending, stop every worker after `idleMs`. */
  private settle(): void {
    if (this.pending.size > 0 || this.idleTimer || this.closed) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.pending.size > 0) return;
      const idle = this.workers.splice(0);
      for (const worker of idle) void worker.terminate();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private spawn(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { bcryptPath } });
    worker.unref();
    worker.on('message', (reply: PasswordResult) => {
      const job = this.pending.get(reply.id);
      if (!job) return;
      this.pending.delete(reply.id);
      if ('error' in reply) job.reject(new Error(reply.error));
      else job.resolve(reply.value);
      this.settle();
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
      this.settle();
    });
    this.workers.push(worker);
    return worker;
  }
}
