import type { Command } from "commander";
import { parseDuration } from "../core/units.js";
import { STORE_BACKENDS } from "../store/backends.js";
import { choiceOption } from "./choice-option.js";
import { parseOption, UsageError } from "./errors.js";

/** How a command reaches a shared bucket: --key, --store and --on-store-error. */
export interface SharedBucketOptions {
  /** The bucket's name; absent for a private bucket. */
  key?: string;
  /** The store URL; absent means TBUCKET_STORE or the default SQLite file. */
  store?: string;
  /** What to do when the store cannot be reached; `open` only where requests are admitted (the HTTP proxy). */
  onStoreError: (typeof HTTP_STORE_ERROR_MODES)[number];
  /** Pipe and run: how long after the store was lost a wait gives up (--store-timeout). */
  storeTimeoutMs: number;
}

export const STORE_ERROR_MODES = ["fail", "local"] as const;
/** The proxy admits requests, so it may also let them through while the store is away. */
export const HTTP_STORE_ERROR_MODES = ["fail", "local", "open"] as const;

/** --store-timeout's default: a restart of the store is ridden out, a store gone for good is said. */
export const DEFAULT_STORE_TIMEOUT_MS = 10_000;

/** --store's help, the same wherever a store is named: the addresses of every backend that names its own. */
export const STORE_HELP = `where shared buckets live: ${STORE_BACKENDS.flatMap((backend) => backend.help ?? []).join(", ")} (default: $TBUCKET_STORE or sqlite:)`;

/**
 * Declares --key, --store and --on-store-error, the same on every command
 * that takes tokens; pipe and run (`waits`) also --store-timeout, the proxy
 * (`admits`) also the mode `open`.
 */
export function addSharedBucketOptions(command: Command, role: "waits" | "admits" = "waits"): Command {
  command
    .option("--key <name>", "share the bucket named <name> with every tbucket process on the same store")
    .option("--store <url>", STORE_HELP);
  if (role === "admits") {
    return command.addOption(
      choiceOption(
        "--on-store-error <mode>",
        "while the store is away (it is asked again every second): fail (503, or TCP transfers wait), local (private buckets), or open (HTTP: let requests through)",
        HTTP_STORE_ERROR_MODES,
        "a mode",
      ).default("fail"),
    );
  }
  return command
    .addOption(
      choiceOption("--on-store-error <mode>", "when the store cannot be reached: fail (exit 1) or local (warn, go on with a private bucket)", STORE_ERROR_MODES, "a mode").default("fail"),
    )
    .option("--store-timeout <d>", "when the store is lost mid-way, wait up to d for it to come back before stopping (0: stop at once)", "10s");
}

/** --key, --store and --on-store-error as commander hands them over. */
export interface SharedBucketFlags {
  key?: string;
  store?: string;
  onStoreError?: string;
  storeTimeout?: string;
}

/** Checks the shared-bucket options that commander leaves as text. */
export function parseSharedBucketOptions(options: SharedBucketFlags): SharedBucketOptions {
  // choiceOption has checked it.
  const onStoreError = (options.onStoreError ?? "fail") as SharedBucketOptions["onStoreError"];
  if (options.key !== undefined) checkKeyName("--key", options.key);
  if (options.store !== undefined && options.key === undefined) {
    throw new UsageError(`--store: needs --key; try "--key backups --store ${options.store}"`);
  }
  const storeTimeoutMs = options.storeTimeout === undefined ? DEFAULT_STORE_TIMEOUT_MS : parseOption("--store-timeout", options.storeTimeout, parseDuration);
  return { key: options.key, store: options.store, onStoreError, storeTimeoutMs };
}

/** A shared bucket's name, the same for --key and `tbucket key`; anything else is a UsageError prefixed with `what`. */
export function checkKeyName(what: string, name: string): string {
  if (!/^[\w.:@/-]{1,200}$/.test(name)) {
    throw new UsageError(`${what}: "${name}" is not a key name; use letters, digits and . _ - : @ / (at most 200), e.g. "backups"`);
  }
  return name;
}
