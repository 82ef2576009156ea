import { alignColumns, exactByteRate, grouped, humanAmount, humanBytes, humanRate } from "../../core/format.js";
import { defaultBurst } from "../../core/default-burst.js";
import { parseAnyRate, type RateKind } from "../../core/units.js";
import { type BucketState, type BucketStore, StoreError } from "../../store/bucket-store.js";
import { EXIT, parseOption, RuntimeError, UsageError } from "../errors.js";
import { pausedWithoutBurst } from "../open-limiter.js";
import { writeStandardOutput } from "../standard-streams.js";
import { describeStoreFailure } from "../store-failure.js";
import { openCommandStore, storeLocation } from "../store-opener.js";
import { type KeyRequest, parseKeyBurst, parseKeyRate } from "./options.js";

/** Runs `tbucket key ...`; resolves to the exit status. */
export async function runKey(request: KeyRequest): Promise<number> {
  const location = storeLocation(request.store);
  let store: BucketStore;
  try {
    store = await openCommandStore(location);
  } catch (error) {
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: false })) : error;
  }
  try {
    return await act(store, request);
  } catch (error) {
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: false })) : error;
  } finally {
    await store.close();
  }
}

async function act(store: BucketStore, request: KeyRequest): Promise<number> {
  switch (request.action) {
    case "list": {
      const states = await store.list();
      if (request.json) print(JSON.stringify(states.map((state) => toJson(state, store)), null, 2));
      else if (states.length === 0) process.stderr.write(`tbucket: no shared buckets in ${store.url}; create one with: tbucket key set <key> --rate 20mb\n`);
      else print(formatTable(states));
      return EXIT.ok;
    }
    case "show": {
      const state = await store.read(request.key);
      if (!state) throw notSet(request.key, store);
      print(request.json ? JSON.stringify(toJson(state, store), null, 2) : formatState(state, store));
      return EXIT.ok;
    }
    case "delete": {
      const deleted = await store.delete(request.key);
      if (request.json) print(JSON.stringify({ key: request.key, store: store.url, deleted }));
      if (!deleted) {
        if (!request.json) process.stderr.write(`tbucket: ${notSet(request.key, store).message}\n`);
        return EXIT.failure;
      }
      return EXIT.ok;
    }
    case "set": {
      const existing = await store.read(request.key);
      const kind: RateKind = request.kind ?? existing?.kind ?? (request.rate !== undefined ? parseOption("--rate", request.rate, (text) => parseAnyRate(text, { allowZero: true })).kind : "count");
      if (request.rate === undefined && !existing) {
        throw new UsageError(`--rate: a new key needs a rate; try "tbucket key set ${request.key} --rate ${kind === "bytes" ? "20mb" : "5/s"}"`);
      }
      const keepRate = existing && existing.kind === kind ? existing.rate : undefined;
      const rate = request.rate !== undefined ? parseKeyRate(request.rate, kind) : keepRate!;
      if (rate === 0 && kind === "bytes" && request.burst === undefined && keepRate === undefined) throw pausedWithoutBurst();
      // A rate change keeps the stored burst, as pv -R changes only the rate.
      const burst =
        request.burst !== undefined ? parseKeyBurst(request.burst, kind) : keepRate !== undefined ? existing!.burst : defaultBurst(kind, rate);
      const state = await store.configure(request.key, { rate, burst, kind });
      print(request.json ? JSON.stringify(toJson(state, store), null, 2) : formatState(state, store));
      return EXIT.ok;
    }
  }
}

function notSet(key: string, store: BucketStore): RuntimeError {
  return new RuntimeError(`key "${key}": not set in ${store.url}; see the keys with: tbucket key list`);
}

function print(text: string): void {
  writeStandardOutput(`${text}\n`);
}

/** JSON for scripts: numbers in tokens and tokens per second; an unlimited rate is null. */
function toJson(state: BucketState, store: BucketStore) {
  return {
    key: state.key,
    store: store.url,
    kind: state.kind,
    rate: state.rate === Infinity ? null : state.rate,
    burst: state.burst,
    tokens: state.tokens,
    updatedAt: new Date(state.updatedAtMs).toISOString(),
    // A key a proxy made for one client: the store forgets it once it is full again.
    ...(state.expiresWhenFull ? { expiresWhenFull: true } : {}),
  };
}

/** The rate as the progress line shows a limit; with `exact`, the bytes a second too. */
function formatRate(state: BucketState, exact: boolean): string {
  const text = humanRate(state.kind, state.rate);
  return exact && state.kind === "bytes" && state.rate >= 1024 && state.rate !== Infinity ? `${text} (${exactByteRate(state.rate)})` : text;
}

/**
 * A level below zero is a debt: a chunk larger than what was left took its
 * tokens ahead, and the next waits until the rate has paid it back.
 */
function formatLevel(state: BucketState): string {
  const owed = humanAmount(state.kind, -state.tokens);
  // A debt too small to show ("owes 0 B") reads as the empty bucket it is.
  if (state.tokens < 0 && !/^0( B)?$/.test(owed)) return `0 (owes ${owed}${state.kind === "count" ? " tokens" : ""})`;
  const tokens = Math.max(0, state.tokens);
  const percent = Math.round((tokens / state.burst) * 100);
  return `${humanAmount(state.kind, tokens)} (${tokens >= state.burst ? "full" : `${percent}%`})`;
}

function formatState(state: BucketState, store: BucketStore): string {
  const rows: Array<[string, string]> = [
    ["key", state.key],
    ["store", store.url],
    ["kind", state.kind === "bytes" ? "bytes" : "count (lines, launches)"],
    ["rate", formatRate(state, true)],
    // The exact figure where the human one rounds (1 KiB and up), as for the rate: not "10 B (10 B)".
    ["burst", state.kind === "bytes" && state.burst >= 1024 ? `${humanBytes(state.burst)} (${grouped(state.burst)} B)` : humanAmount(state.kind, state.burst)],
    ["level", formatLevel(state)],
    ["updated", new Date(state.updatedAtMs).toISOString()],
  ];
  return alignColumns(rows.map(([name, value]) => [`${name}:`, value]), { gap: " " }).join("\n");
}

function formatTable(states: BucketState[]): string {
  const rows = [
    ["KEY", "KIND", "RATE", "BURST", "LEVEL", "UPDATED"],
    ...states.map((state) => [
      state.key,
      state.kind,
      formatRate(state, false),
      humanAmount(state.kind, state.burst),
      formatLevel(state),
      new Date(state.updatedAtMs).toISOString(),
    ]),
  ];
  return alignColumns(rows).join("\n");
}
