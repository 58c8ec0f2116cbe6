import { computed, reactive } from 'vue';
import type { User } from '../contract/types';
import { call } from './api';

/** Who is signed in; the cookie itself is HttpOnly, so the daemon is asked. */
export const session = reactive<{ user: User | null; checked: boolean }>({ user: null, checked: false });

export const isAdmin = computed(() => session.user?.roles.includes('ADMIN') ?? false);

export function signedIn(user: User): void {
  session.user = user;
}

export function signedOut(): void {
  session.user = null;
}

/**
 * Whether the browser's session cookie (HttpOnly: only the daemon reads it)
 * is a session: the cookie alone signs the console in, and the answer is
 * null rather than a 401 when it does not, so nothing is logged as an error.
 */
export async function loadSession(): Promise<void> {
  session.user = (await call('getSession')).data;
  session.checked = true;
}
