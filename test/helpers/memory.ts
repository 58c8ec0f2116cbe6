import { readFileSync } from 'node:fs';

/** A process's resident set size, in MB, as the kernel reports it. */
export const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
