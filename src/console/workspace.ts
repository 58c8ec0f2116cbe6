import { inject, provide, type InjectionKey } from 'vue';
import type { Workspace } from '../contract/types';
import { useLoader } from './actions';
import { call } from './api';

/** The workspace the sub-pages under /workspaces/{id} show, loaded once by their layout (WorkspaceLayout.vue). */
export type WorkspaceLoader = ReturnType<typeof useLoader<Workspace>>;

const workspaceKey: InjectionKey<WorkspaceLoader> = Symbol('workspace');

/** The workspace's sub-pages, in the order of its local navigation; `path` follows /workspaces/{id}. */
export const WORKSPACE_SECTIONS = [
  { path: '', label: 'Summary' },
  { path: '/members', label: 'Members' },
  { path: '/extensions', label: 'Extensions' },
  { path: '/subscriptions', label: 'Subscriptions' },
  { path: '/events', label: 'Events' },
] as const;

/** The document's title of a workspace sub-page (before ` · platform`), by the section's label and the workspace's name or id. */
export const workspaceTitle = (section: string, workspace: string) => (section === 'Summary' || section === '' ? `${workspace} · Workspaces` : `${section} · ${workspace}`);

export const workspaceLink = (id: string, section = '') => `/workspaces/${encodeURIComponent(id)}${section}`;

/** Loads the workspace and hands it to the sub-page below. */
export function provideWorkspace(id: string): WorkspaceLoader {
  const workspace = useLoader(async () => (await call('getWorkspace', { params: { id } })).data);
  void workspace.reload();
  provide(workspaceKey, workspace);
  return workspace;
}

/** The workspace the layout loaded; a sub-page reloads it after changing its members. */
export function useWorkspace(): WorkspaceLoader {
  const workspace = inject(workspaceKey);
  if (!workspace) throw new Error('a workspace sub-page is shown outside WorkspaceLayout');
  return workspace;
}
