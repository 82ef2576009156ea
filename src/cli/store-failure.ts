import type { StoreError } from "../store/bucket-store.js";

/**
 * A store failure as the user reads it: the store's own line, then the flags
 * that offer a way out. The store knows nothing of the command line; which
 * flag helps depends on the failure, and on whether the command can go on
 * with a private bucket (`offerLocal`: pipe and run without --on-store-error local).
 */
export function describeStoreFailure(error: StoreError, options: { offerLocal: boolean }): string {
  switch (error.failure) {
    case "unreachable":
      return options.offerLocal ? `${error.message}, or use --on-store-error local` : error.message;
    case "busy":
    case "corrupt":
    case "read-only":
    case "cannot-open":
      return `${error.message}, or use another --store sqlite:<file>`;
    case "newer-schema":
      return `${error.message} or use another --store sqlite:<file>`;
    case "sqlite":
      return `${error.message}; use another --store sqlite:<file>`;
    case "deleted":
      return `${error.message}; set it again with "tbucket key set ${error.key} --rate <rate>"`;
    default:
      return error.message;
  }
}
