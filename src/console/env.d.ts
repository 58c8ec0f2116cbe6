declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent<object, object, unknown>;
  export default component;
}

declare module '*.css';

/** Each operation's method and path, from the endpoint table at build time (vite.config.ts). */
declare module 'virtual:api-routes' {
  const routes: import('../contract/client').Routes;
  export default routes;
}
