/** A trailing-edge debounce with flush and cancel. Pure: unit-tested with mocked timers. */

export interface Debounced<A extends unknown[]> {
  /** Schedule a call with these arguments; a later call within `ms` replaces it. */
  (...args: A): void;
  /** Run a pending call now (no-op when none is pending). */
  flush(): void;
  /** Drop a pending call. */
  cancel(): void;
  /** Whether a call is waiting. */
  readonly pending: boolean;
}

export function debounce<A extends unknown[]>(fn: (...args: A) => void, ms: number): Debounced<A> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastArgs: A | undefined;

  const run = (): void => {
    timer = undefined;
    const args = lastArgs as A;
    lastArgs = undefined;
    fn(...args);
  };

  const debounced = ((...args: A): void => {
    lastArgs = args;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(run, ms);
  }) as Debounced<A>;

  debounced.flush = (): void => {
    if (timer === undefined) return;
    clearTimeout(timer);
    run();
  };
  debounced.cancel = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    lastArgs = undefined;
  };
  Object.defineProperty(debounced, 'pending', { get: () => timer !== undefined });
  return debounced;
}
