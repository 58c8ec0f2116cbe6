import { reactive } from 'vue';
import { messageOf } from './api';

/**
 * Runs the page's actions one at a time, and keeps each one's error under its
 * own name so that it is shown next to the control that caused it.
 */
export function useActions() {
  const state = reactive<{ busy: string | null; errors: Record<string, string> }>({ busy: null, errors: {} });
  async function run(name: string, action: () => Promise<unknown>): Promise<boolean> {
    if (state.busy) return false;
    state.busy = name;
    delete state.errors[name];
    try {
      await action();
      return true;
    } catch (error) {
      state.errors[name] = messageOf(error);
      return false;
    } finally {
      state.busy = null;
    }
  }
  return Object.assign(state, { run });
}

/** Loads a page's data, with its loading state and error. */
export function useLoader<T>(load: () => Promise<T>) {
  const state = reactive<{ loading: boolean; error: string | null; data: T | null }>({ loading: true, error: null, data: null });
  // Only the first load shows the loading state; a reload keeps the page (and focus) in place.
  async function reload() {
    state.loading = state.data === null;
    state.error = null;
    try {
      state.data = (await load()) as never;
    } catch (error) {
      state.error = messageOf(error);
    } finally {
      state.loading = false;
    }
  }
  return Object.assign(state, { reload });
}

export const formatTime = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
