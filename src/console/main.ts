import { createApp } from 'vue';
import App from './App.vue';
import { whenSessionEnds } from './api';
import { router } from './router';
import { session } from './session';
import './styles.css';

whenSessionEnds(() => {
  if (!session.user) return;
  session.user = null;
  void router.push({ path: '/login', query: { next: router.currentRoute.value.fullPath } });
});

createApp(App).use(router).mount('#app');
