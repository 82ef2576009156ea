import { backendOf } from "../store/backends.js";
import type { StoreError } from "../store/bucket-store.js";

/**
 * A store failure as the user reads it: the store's own line, then the flags
 * that offer a way out. The store knows nothing of the command line; which
 * flag helps depends on the kind of failure, on how the store's backend names
 * another store of its kind (`sqlite:<file>`), and on whether the command can
 * go on with a private bucket (`offerLocal`: pipe and run without --on-store-error local).
 */
export function describeStoreFailure(error: StoreError, options: { offerLocal: boolean }): string {
  const another = `another --store ${backendOf(error.storeUrl)?.another ?? "<address>"}`;
  switch (error.failure) {
    case "unreachable":
      return options.offerLocal ? `${error.message}, or use --on-store-error local` : error.message;
    case "locked":
    case "corrupt":
    case "read-only":
    case "cannot-open":
      return `${error.message}, or use ${another}`;
    case "newer-schema":
      // The store's line ends in "upgrade tbucket".
      return `${error.message} or use ${another}`;
    case "failed":
      return `${error.message}; use ${another}`;
    case "deleted":
      return `${error.message}; set it again with "tbucket key set ${error.key} --rate <rate>"`;
    default:
      return error.message;
  }
}
