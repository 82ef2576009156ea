import type { Command } from "commander";
import { choiceOption } from "./choice-option.js";
import { UsageError } from "./errors.js";

/** How a command reaches a shared bucket: --key, --store and --on-store-error. */
export interface SharedBucketOptions {
  /** The bucket's name; absent for a private bucket. */
  key?: string;
  /** The store URL; absent means TBUCKET_STORE or the default SQLite file. */
  store?: string;
  /** What to do when the store cannot be reached. */
  onStoreError: (typeof STORE_ERROR_MODES)[number];
}

export const STORE_ERROR_MODES = ["fail", "local"] as const;

/** --store's help, the same wherever a store is named. */
export const STORE_HELP = "where shared buckets live: sqlite:, sqlite:<path>, redis://host:port[/db] (default: $TBUCKET_STORE or sqlite:)";

/** Declares --key, --store and --on-store-error, the same on every command that takes tokens. */
export function addSharedBucketOptions(command: Command): Command {
  return command
    .option("--key <name>", "share the bucket named <name> with every tbucket process on the same store")
    .option("--store <url>", STORE_HELP)
    .addOption(
      choiceOption("--on-store-error <mode>", "when the store cannot be reached: fail (exit 1) or local (warn, go on with a private bucket)", STORE_ERROR_MODES, "a mode").default("fail"),
    );
}

/** --key, --store and --on-store-error as commander hands them over. */
export interface SharedBucketFlags {
  key?: string;
  store?: string;
  onStoreError?: string;
}

/** Checks the shared-bucket options that commander leaves as text. */
export function parseSharedBucketOptions(options: SharedBucketFlags): SharedBucketOptions {
  // choiceOption has checked it.
  const onStoreError = (options.onStoreError ?? "fail") as SharedBucketOptions["onStoreError"];
  if (options.key !== undefined) checkKeyName("--key", options.key);
  if (options.store !== undefined && options.key === undefined) {
    throw new UsageError(`--store: needs --key; try "--key backups --store ${options.store}"`);
  }
  return { key: options.key, store: options.store, onStoreError };
}

/** A shared bucket's name, the same for --key and `tbucket key`; anything else is a UsageError prefixed with `what`. */
export function checkKeyName(what: string, name: string): string {
  if (!/^[\w.:@/-]{1,200}$/.test(name)) {
    throw new UsageError(`${what}: "${name}" is not a key name; use letters, digits and . _ - : @ / (at most 200), e.g. "backups"`);
  }
  return name;
}
