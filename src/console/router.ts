import { createRouter, createWebHistory, type RouteComponent, type RouteLocationNormalized, type RouteRecordRaw } from 'vue-router';
import { isAdmin, loadSession, session } from './session';
import { workspaceTitle } from './workspace';

/** `key` is reserved by Vue, so the extension key reaches pages as `extensionKey`. */
const extensionKey = (route: RouteLocationNormalized) => ({ extensionKey: String(route.params.key) });

/** A route parameter as text (a repeated one is not used here). */
const param = (route: RouteLocationNormalized, name: string) => String(route.params[name]);

declare module 'vue-router' {
  interface RouteMeta {
    /** The document's title, before ` · platform`; a page about one thing names it. */
    title: string | ((route: RouteLocationNormalized) => string);
    /** Reachable without signing in. */
    public?: boolean;
    admin?: boolean;
    /** A workspace sub-page: its label in the workspace's navigation. */
    section?: string;
  }
}

/** One sub-page of a workspace, titled by its section and the workspace's id until WorkspaceLayout knows its name. */
const workspaceSection = (path: string, section: string, component: () => Promise<RouteComponent | { default: RouteComponent }>): RouteRecordRaw => ({
  path,
  component,
  props: true,
  meta: { section, title: (route) => workspaceTitle(section, param(route, 'id')) },
});

// The console's routes (README, The web console). Every page is its own chunk: the first load carries only what it shows.
const routes: RouteRecordRaw[] = [
  { path: '/login', component: () => import('./pages/LoginPage.vue'), meta: { title: 'Sign in', public: true } },
  { path: '/', component: () => import('./pages/OverviewPage.vue'), meta: { title: 'Overview' } },
  { path: '/marketplace', component: () => import('./pages/MarketplacePage.vue'), meta: { title: 'Marketplace' } },
  {
    path: '/marketplace/:key',
    component: () => import('./pages/ExtensionPage.vue'),
    props: extensionKey,
    meta: { title: (route) => `${param(route, 'key')} · Marketplace` },
  },
  {
    path: '/marketplace/:key/versions/:version',
    component: () => import('./pages/VersionPage.vue'),
    props: (route) => ({ ...extensionKey(route), version: param(route, 'version') }),
    meta: { title: (route) => `${param(route, 'key')} ${param(route, 'version')} · Marketplace` },
  },
  { path: '/event-types', component: () => import('./pages/EventTypesPage.vue'), meta: { title: 'Event types' } },
  {
    path: '/event-types/:eventKey',
    component: () => import('./pages/EventTypePage.vue'),
    props: true,
    meta: { title: (route) => `${param(route, 'eventKey')} · Event types` },
  },
  { path: '/workspaces', component: () => import('./pages/WorkspacesPage.vue'), meta: { title: 'Workspaces' } },
  {
    // The workspace's sub-pages share a frame (its name, its navigation: WorkspaceLayout.vue).
    path: '/workspaces/:id',
    component: () => import('./pages/WorkspaceLayout.vue'),
    props: true,
    children: [
      workspaceSection('', 'Summary', () => import('./pages/WorkspacePage.vue')),
      workspaceSection('members', 'Members', () => import('./pages/WorkspaceMembersPage.vue')),
      workspaceSection('extensions', 'Extensions', () => import('./pages/WorkspaceExtensionsPage.vue')),
      workspaceSection('subscriptions', 'Subscriptions', () => import('./pages/WorkspaceSubscriptionsPage.vue')),
      workspaceSection('events', 'Events', () => import('./pages/WorkspaceEventsPage.vue')),
    ],
  },
  {
    path: '/workspaces/:id/events/:eventId',
    component: () => import('./pages/EventPage.vue'),
    props: true,
    meta: { title: 'Event' },
  },
  { path: '/dead-letters', component: () => import('./pages/DeadLettersPage.vue'), meta: { title: 'Dead letters', admin: true } },
  {
    path: '/dead-letters/:id',
    component: () => import('./pages/DeadLetterPage.vue'),
    props: true,
    meta: { title: 'Dead letter', admin: true },
  },
  {
    path: '/extensions/:key/config',
    component: () => import('./pages/ExtensionConfigPage.vue'),
    props: extensionKey,
    meta: { title: 'Configuration', admin: true },
  },
  {
    path: '/extensions/:key/webhooks',
    component: () => import('./pages/ExtensionWebhooksPage.vue'),
    props: extensionKey,
    meta: { title: 'Inbound webhooks', admin: true },
  },
  { path: '/users', component: () => import('./pages/UsersPage.vue'), meta: { title: 'Users', admin: true } },
  { path: '/account', component: () => import('./pages/AccountPage.vue'), meta: { title: 'Account' } },
  { path: '/:unknown(.*)*', component: () => import('./pages/NotFoundPage.vue'), meta: { title: 'Not found', public: true } },
];

export const router = createRouter({ history: createWebHistory(), routes });

router.beforeEach(async (to) => {
  if (!session.checked) {
    // The first page's chunk loads while the daemon is asked who is signed in, not after.
    for (const record of to.matched) {
      const component = record.components?.default;
      if (typeof component === 'function') void (component as () => Promise<unknown>)();
    }
    await loadSession();
  }
  if (to.meta.public) return true;
  if (!session.user) return { path: '/login', query: to.fullPath === '/' ? {} : { next: to.fullPath } };
  // A member who is not ADMIN never sees admin pages; the API would refuse them anyway.
  if (to.meta.admin && !isAdmin.value) return { path: '/' };
  return true;
});

router.afterEach((to) => {
  const title = typeof to.meta.title === 'function' ? to.meta.title(to) : to.meta.title;
  document.title = `${title} · platform`;
});
