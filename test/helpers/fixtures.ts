import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import type { DaemonConfig } from '../../src/daemon/config.js';
import type { Api } from './http.js';
import { tempDir } from './temp.js';

/** Retries in milliseconds, so that a whole ladder runs while a test waits for its outcome. */
export const FAST_DISPATCH: DaemonConfig['dispatch'] = {
  retrySchedule: [5, 10, 20],
  deliveryTimeoutMs: 2_000,
  deliveryConcurrency: 32,
  handlerConcurrency: 8,
  handlerTimeoutMs: 2_000,
  denyPrivateTargets: false,
};

function expectStatus(result: { status: number; text: string }, status: number, what: string): void {
  assert.is(result.status, status, `${what}: ${result.text}`);
}

/** Creates the extension if needed and publishes a version of it. */
export async function publishExtension(admin: Api, key: string, version = '1.0.0', extra: Record<string, unknown> = {}): Promise<void> {
  const existing = await admin.get(`/api/marketplace/extensions/${key}`);
  if (existing.status === 404) {
    expectStatus(await admin.post('/api/admin/marketplace/extensions', { extensionKey: key, name: key.toUpperCase() }), 201, `create ${key}`);
  }
  expectStatus(
    await admin.post(`/api/admin/marketplace/extensions/${key}/versions`, {
      version,
      artifactUrl: `https://artifacts.example.test/${key}-${version}.jar`,
      ...extra,
    }),
    201,
    `publish ${key}@${version}`,
  );
}

/** Sets the extension's configuration fields, each `[name, type, value]`. */
export async function configureExtension(admin: Api, key: string, fields: Array<[string, string, unknown]>): Promise<void> {
  const body = { fields: fields.map(([name, type, value]) => ({ name, type, value })) };
  expectStatus(await admin.put(`/api/admin/marketplace/extensions/${key}/config`, body), 200, `configure ${key}`);
}

export async function createWorkspace(admin: Api, id: string): Promise<void> {
  expectStatus(await admin.post('/api/admin/workspaces', { id, name: `Workspace ${id}` }), 201, `create workspace ${id}`);
}

export async function install(admin: Api, workspace: string, extensionKey: string, version?: string): Promise<void> {
  expectStatus(
    await admin.post(`/api/workspaces/${workspace}/extensions`, { extensionKey, ...(version ? { version } : {}) }),
    201,
    `install ${extensionKey} in ${workspace}`,
  );
}

export async function subscribeExternal(
  admin: Api,
  workspace: string,
  eventKey: string,
  extensionKey: string,
  serviceBaseUrl: string,
): Promise<{ id: string; signingSecret: string }> {
  const result = await admin.post(`/api/workspaces/${workspace}/subscriptions`, {
    eventKey,
    extensionKey,
    kind: 'EXTERNAL_SERVICE',
    serviceBaseUrl,
  });
  expectStatus(result, 201, `subscribe ${extensionKey} to ${eventKey}`);
  return result.body.data;
}

/**
 * Publishes `count` events into `workspace` from `publishers` clients at once,
 * each answered 200; answers the event ids in the order they were answered.
 */
export async function publishConcurrently(
  client: Api,
  workspace: string,
  count: number,
  publishers: number,
  eventOf: (n: number) => { eventKey: string; payload: Record<string, unknown> },
): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: publishers }, async () => {
      while (next < count) {
        const n = next++;
        const result = await client.post(`/api/workspaces/${workspace}/events/publish`, eventOf(n));
        expectStatus(result, 200, `publish ${n}`);
        ids.push(result.body.meta.eventId);
      }
    }),
  );
  return ids;
}

/** Extension published, workspace created, extension installed. */
export async function workspaceWith(admin: Api, workspace: string, extensionKey: string): Promise<void> {
  const existing = await admin.get(`/api/marketplace/extensions/${extensionKey}`);
  if (existing.status === 404) await publishExtension(admin, extensionKey);
  await createWorkspace(admin, workspace);
  await install(admin, workspace, extensionKey);
}

/** A fresh plugins folder holding copies of the named test plugins (test/fixtures/plugins). */
export async function pluginsDirWith(...names: string[]): Promise<string> {
  const dir = join(await tempDir(), 'plugins');
  mkdirSync(dir);
  for (const name of names) copyFileSync(fileURLToPath(new URL(`../fixtures/plugins/${name}`, import.meta.url)), join(dir, name));
  return dir;
}
