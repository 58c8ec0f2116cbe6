import { computed, reactive } from 'vue';
import { paths } from '../contract/paths';
import type { User } from '../contract/types';
import { api, ApiError } from './api';

/** Who is signed in; the cookie itself is HttpOnly, so the daemon is asked. */
export const session = reactive<{ user: User | null; checked: boolean }>({ user: null, checked: false });

export const isAdmin = computed(() => session.user?.roles.includes('ADMIN') ?? false);

export async function loadSession(): Promise<void> {
  try {
    session.user = await api.get<User>(paths.me);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 0 || error.status >= 500) throw error;
    session.user = null;
  }
  session.checked = true;
}
