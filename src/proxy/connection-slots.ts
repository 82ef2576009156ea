import { type Clock, systemClock } from "../core/clock.js";
import { LimitSetLimiter } from "../core/limit-set-limiter.js";
import { type BucketScope, TCP_SCOPES, type TcpScopeRow } from "./key-scopes.js";

/** What a connection costs in a set of one concurrency limit: a slot (the count is counted by no limit). */
const ONE_CONNECTION = { count: 1 } as const;

/**
 * The slots of one scope key (the link, a client): `acquire` waits for a free
 * one, first come first served, up to `maxWaitMs` (0: only a slot free now),
 * and resolves to its release, or undefined when none came in time. A wait
 * whose signal aborts (its client left) leaves the line at once and rejects.
 */
export interface SlotSource {
  acquire(maxWaitMs: number, signal: AbortSignal): Promise<(() => void) | undefined>;
  /** Gives back what it holds (a store's slots); called once no connection holds or waits for a slot. */
  close(): Promise<void>;
}

/** Opens the slots of a scope key: `""` for the link, the client's address. A store-backed opener names its shared key from it. */
export type SlotOpener = (key: string, n: number) => SlotSource | Promise<SlotSource>;

export interface ConnectionSlotsOptions {
  scope: BucketScope;
  /** Connections open at once per scope key. */
  n: number;
  /** How long a connection over the limit waits for a slot; 0 refuses it at once. */
  maxWaitMs: number;
  /** Default: private slots, in this process. */
  open?: SlotOpener;
  clock?: Clock;
}

/** What a connection got: a slot (release it when the connection ends) after `waitMs`, or none. */
export type SlotDecision = { ok: true; waitMs: number; release(): void } | { ok: false; waitMs: number };

interface Entry {
  opening: Promise<SlotSource>;
  /** Connections holding or waiting for a slot of this key. */
  users: number;
}

/**
 * Private slots: a set of one concurrency limit (LimitSetLimiter keeps the
 * line of those waiting for a slot, first come first served; a release wakes
 * the first, and one that gives up leaves the line and wakes the next). The
 * wait's time limit is a timer on `clock` that aborts the wait.
 */
export function privateSlots(clock: Clock): SlotOpener {
  return (_key, n) => {
    const set = new LimitSetLimiter([{ kind: "concurrency", n }], { unit: "count", clock });
    return {
      async acquire(maxWaitMs, signal) {
        // Nobody waits with a limit of 0 (every connection asks the same): free now, or refused.
        if (maxWaitMs === 0 && set.set.levelAt(clock.now(), 0) < 1) return undefined;
        const held = await waitWithin(maxWaitMs, signal, clock, (within) => set.acquire(ONE_CONNECTION, Infinity, within));
        return held && (() => set.release(held));
      },
      close: async () => {},
    };
  };
}

/**
 * Runs `wait` with a signal that also aborts after `maxWaitMs` on `clock`;
 * undefined when that time ran out first, the caller's abort rethrown. With
 * 0 there is no timer (it would abort a wait that needs none): `wait` must
 * answer at once itself.
 */
export async function waitWithin<T>(maxWaitMs: number, signal: AbortSignal, clock: Clock, wait: (signal: AbortSignal) => Promise<T>): Promise<T | undefined> {
  if (maxWaitMs === Infinity || maxWaitMs === 0) return wait(signal);
  const timeUp = new AbortController();
  const stopTimer = new AbortController();
  clock.sleep(maxWaitMs, stopTimer.signal).then(
    () => timeUp.abort(new Error("the wait for a slot ran out")),
    () => {},
  );
  try {
    return await wait(AbortSignal.any([signal, timeUp.signal]));
  } catch (error) {
    if (timeUp.signal.aborted && !signal.aborted) return undefined;
    throw error;
  } finally {
    stopTimer.abort();
  }
}

/**
 * ConnectionSlots holds `--concurrency`: at most `n` connections open at
 * once per scope key (the link, or each client address), the rest waiting
 * their turn up to `maxWaitMs`. A key's slots are opened with its first
 * connection and dropped once no connection holds or waits for one (free
 * slots are the same as new ones); the link's stay.
 */
export class ConnectionSlots {
  readonly #scope: TcpScopeRow;
  readonly #n: number;
  readonly #maxWaitMs: number;
  readonly #open: SlotOpener;
  readonly #clock: Clock;
  readonly #entries = new Map<string, Entry>();
  readonly #closing = new Set<Promise<void>>();
  #connections = 0;

  constructor(options: ConnectionSlotsOptions) {
    this.#scope = TCP_SCOPES[options.scope];
    this.#n = options.n;
    this.#maxWaitMs = options.maxWaitMs;
    this.#clock = options.clock ?? systemClock;
    this.#open = options.open ?? privateSlots(this.#clock);
  }

  /** Slot keys held now. */
  get liveKeys(): number {
    return this.#entries.size;
  }

  /**
   * Waits for a slot for a connection from `clientAddress`, up to
   * `maxWaitMs` less `waitedMs` (what it already waited for another limit).
   * Rejects when `signal` aborts first (the client left), having taken nothing.
   */
  async acquire(clientAddress: string, signal: AbortSignal, waitedMs = 0): Promise<SlotDecision> {
    const key = this.#scope.keyOf(clientAddress, ++this.#connections);
    let entry = this.#entries.get(key);
    if (!entry) {
      const opened: Entry = { opening: Promise.resolve().then(() => this.#open(key, this.#n)), users: 0 };
      // Slots that failed to open (a store away) are opened afresh by the next connection.
      opened.opening.catch(() => this.#entries.get(key) === opened && this.#entries.delete(key));
      this.#entries.set(key, opened);
      entry = opened;
    }
    entry.users++;
    const startedMs = this.#clock.now();
    let release: (() => void) | undefined;
    try {
      const source = await entry.opening;
      release = await source.acquire(Math.max(0, this.#maxWaitMs - waitedMs), signal);
    } catch (error) {
      this.#leave(key, entry);
      throw error;
    }
    const waitMs = this.#clock.now() - startedMs;
    if (!release) {
      this.#leave(key, entry);
      return { ok: false, waitMs };
    }
    let released = false;
    const held = release;
    return {
      ok: true,
      waitMs,
      release: () => {
        if (released) return;
        released = true;
        held();
        this.#leave(key, entry);
      },
    };
  }

  /** Gives back every key's slots (the proxy is closing). */
  async close(): Promise<void> {
    for (const entry of this.#entries.values()) this.#closeEntry(entry);
    this.#entries.clear();
    await Promise.all(this.#closing);
  }

  #leave(key: string, entry: Entry): void {
    // The link's slots stay while the proxy runs.
    if (--entry.users > 0 || key === "" || this.#entries.get(key) !== entry) return;
    this.#entries.delete(key);
    this.#closeEntry(entry);
  }

  #closeEntry(entry: Entry): void {
    const closing = entry.opening.then(
      (source) => source.close().catch(() => {}),
      () => {},
    );
    this.#closing.add(closing);
    void closing.finally(() => this.#closing.delete(closing));
  }
}
