import { computed, reactive } from 'vue';
import type { User } from '../contract/types';
import { ApiError, call } from './api';

/** Who is signed in; the cookie itself is HttpOnly, so the daemon is asked. */
export const session = reactive<{ user: User | null; checked: boolean }>({ user: null, checked: false });

export const isAdmin = computed(() => session.user?.roles.includes('ADMIN') ?? false);

/**
 * Set while this browser holds a session cookie from the console: without it
 * the first load goes straight to the sign-in page rather than asking the
 * daemon and logging a 401 in the browser's console.
 */
const SIGNED_IN = 'platform.signedIn';

export function signedIn(user: User): void {
  session.user = user;
  localStorage.setItem(SIGNED_IN, '1');
}

export function signedOut(): void {
  session.user = null;
  localStorage.removeItem(SIGNED_IN);
}

export async function loadSession(): Promise<void> {
  if (!localStorage.getItem(SIGNED_IN)) {
    session.checked = true;
    return;
  }
  try {
    session.user = (await call('getCurrentUser')).data;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 0 || error.status >= 500) throw error;
    signedOut();
  }
  session.checked = true;
}
