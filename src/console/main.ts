import { createApp } from 'vue';
import App from './App.vue';
import { whenSessionEnds } from './api';
import { router } from './router';
import { session, signedOut } from './session';
import './styles.css';

whenSessionEnds(() => {
  if (!session.user) return;
  signedOut();
  void router.push({ path: '/login', query: { next: router.currentRoute.value.fullPath } });
});

createApp(App).use(router).mount('#app');
