import { type BucketStore, StoreError } from "./bucket-store.js";

/** Failures of one key, not of the store: the others go on asking. */
const KEY_FAILURES = new Set(["deleted", "closed"]);

/**
 * Wraps a store so that, once it has failed (lost, locked, unreachable),
 * every later call rejects at once with that failure instead of asking it
 * again. Without it each key finds out on its own: a SQLite file locked by
 * another program blocks the whole process for the busy timeout at each
 * key's next take, and a Redis that is gone makes each wait its command timeout.
 */
export function failFast(store: BucketStore): BucketStore {
  let failure: StoreError | undefined;
  const guard = <T>(call: () => Promise<T>): Promise<T> => {
    if (failure) return Promise.reject(failure);
    return call().catch((error: unknown) => {
      if (error instanceof StoreError && !KEY_FAILURES.has(error.failure)) failure ??= error;
      throw error;
    });
  };
  return {
    url: store.url,
    take: (key, n, options) => guard(() => store.take(key, n, options)),
    cancel: (key, reservation) => guard(() => store.cancel(key, reservation)),
    read: (key) => guard(() => store.read(key)),
    configure: (key, config, options) => guard(() => store.configure(key, config, options)),
    list: () => guard(() => store.list()),
    delete: (key) => guard(() => store.delete(key)),
    close: () => store.close(),
  };
}
