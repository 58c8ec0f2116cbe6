import { readFileSync } from 'node:fs';

const statusKb = (pid: number, field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

/** A process's resident set size, in MB, as the kernel reports it. */
export const rssMb = (pid: number): number => statusKb(pid, 'VmRSS') / 1024;

/**
 * The anonymous part of a process's resident set (its heaps and buffers), in
 * MB: what a garbage collection can give back. It leaves out the mapped
 * files (Node's own code, shared libraries), which the kernel evicts and
 * reads back in as it pleases on a busy machine.
 */
export const anonymousRssMb = (pid: number): number => statusKb(pid, 'RssAnon') / 1024;
