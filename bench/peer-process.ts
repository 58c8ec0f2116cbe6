import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { benchLogFile } from './log-files.js';

/** A peer queue's process, driven over IPC: one command, one answer. */
export interface PeerProcess<Command, Answer> {
  child: ChildProcess;
  /** Its first message, which says it is ready (and may say where it listens). */
  greeting: unknown;
  ask(command: Command): Promise<Answer>;
  stop(): Promise<void>;
}

/**
 * Starts a peer (`command`: its node argv) on the daemon's core when the
 * bench is pinned, its output in a log of its own; resolves at its first
 * message (it is ready), rejects with its log if it exits before.
 */
export async function startPeerProcess<Command, Answer>(
  name: string,
  command: string[],
  env: Record<string, string>,
  pinned: boolean,
): Promise<PeerProcess<Command, Answer>> {
  const logFile = benchLogFile(`${name}.log`);
  const out = openSync(logFile, 'w');
  const argv = pinned ? ['taskset', '-c', '0', ...command] : command;
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', out, out, 'ipc'], env: { ...process.env, ...env } });
  const greeting = await new Promise<unknown>((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}):\n${readFileSync(logFile, 'utf8')}`)));
  });
  return {
    child,
    greeting,
    ask: (peerCommand) =>
      new Promise((resolve) => {
        child.once('message', (answer) => resolve(answer as Answer));
        child.send(peerCommand as object);
      }),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.send({ type: 'stop' });
      }),
  };
}
