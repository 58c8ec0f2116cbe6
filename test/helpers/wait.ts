type NotYet = null | undefined | false | '' | 0;

/** Polls until `condition` returns a truthy value; fails after `timeoutMs` with `what`. */
export async function waitFor<T>(what: string, condition: () => T | NotYet | Promise<T | NotYet>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
