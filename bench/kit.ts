/**
 * What bench/run.ts lends the groups in their own files (postgres.ts,
 * backlog.ts): the shapes they share and the scenario-4 workspace they set up.
 */
import type autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';

/** One row of the results table. */
export interface Row {
  scenario: string;
  value: number;
  unit: string;
  p50: number | null;
  p99: number | null;
  ratio: number | null;
  rssMb: number | null;
  target: string;
  met: boolean;
  note?: string;
}

export interface Started {
  url: string;
  child: ChildProcess;
  dataDir: string;
  stop(): Promise<void>;
}

export interface Load {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
}

export interface Subscriber {
  url: string;
  server: Server;
  received: number;
  latencies: number[];
  lastAt: number;
}

export interface BenchKit {
  QUICK: boolean;
  SECONDS: number;
  PUBLISH_SECONDS: number;
  PINNED: boolean;
  startDaemon(dataDir?: string, extraEnv?: Record<string, string>): Promise<Started>;
  startSubscriber(): Promise<Subscriber>;
  login(base: string): Promise<string>;
  api(base: string, token: string | null, method: string, path: string, body?: unknown): Promise<unknown>;
  load(options: autocannon.Options): Promise<Load>;
  seedCatalog(base: string, token: string, from: number, count: number, versions: number): Promise<void>;
  record(row: Row): void;
  rssMb(pid: number): number;
  /** CPU time the process has used so far (user and system), in ms. */
  cpuMs(pid: number): number;
  percentile(values: number[], p: number): number;
  waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean>;
}

/** Scenario 4's workspace: one subscription of `bench.tick` to `url`, made through `daemon`; answers the admin's token. */
export async function subscribe(kit: BenchKit, daemon: Started, url: string): Promise<string> {
  const token = await kit.login(daemon.url);
  await kit.api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions', { extensionKey: 'sink', name: 'Sink' });
  await kit.api(daemon.url, token, 'POST', '/api/admin/marketplace/extensions/sink/versions', { version: '1.0.0', artifactUrl: 'https://x.test/sink.jar' });
  await kit.api(daemon.url, token, 'POST', '/api/admin/workspaces', { id: 'bench', name: 'Bench' });
  await kit.api(daemon.url, token, 'POST', '/api/workspaces/bench/extensions', { extensionKey: 'sink' });
  await kit.api(daemon.url, token, 'POST', '/api/workspaces/bench/subscriptions', {
    eventKey: 'bench.tick',
    extensionKey: 'sink',
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl: url,
  });
  return token;
}
