import { storeExists } from "../../store/open-store.js";
import { EXIT } from "../errors.js";
import { writeStandardOutput } from "../standard-streams.js";
import { openCommandStore, storeLocation } from "../store-opener.js";

/** A shell waits for its completions: a store that does not answer at once offers none. */
const CONNECT_TIMEOUT_MS = 500;

/**
 * `tbucket completion --keys [--store URL]`, which the completion scripts run
 * to offer key names after `key show|set|delete` and `--key`: the names, one
 * a line. Whatever fails (no store yet, a bad URL, Redis away) offers nothing
 * and says nothing, and never creates a store.
 */
export async function printKeyNames(store: string | undefined): Promise<number> {
  try {
    const location = storeLocation(store);
    if (!storeExists(location)) return EXIT.ok;
    const opened = await openCommandStore(location, { connectTimeoutMs: CONNECT_TIMEOUT_MS, busyTimeoutMs: 100 });
    try {
      const names = (await opened.list()).map((state) => state.key);
      if (names.length > 0) writeStandardOutput(`${names.join("\n")}\n`);
    } finally {
      await opened.close().catch(() => {});
    }
  } catch {
    // Offer nothing: a completion must never print an error into the command line.
  }
  return EXIT.ok;
}
