import { type Clock, systemClock } from "../core/clock.js";
import type { Limiter } from "../core/limiter.js";
import { checkCount, ExceedsBurstError } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import { WaitLine } from "./wait-line.js";
import { type BucketConfig, type BucketStore, StoreError, type TakeRequest, type TakeResult, takeInOrder } from "./bucket-store.js";

export interface SharedLimiterOptions {
  store: BucketStore;
  key: string;
  /**
   * The key's settings as the store holds them now, and its level when read
   * with them (a BucketState); without one the bucket is taken to be full.
   */
  config: BucketConfig & { tokens?: number };
  /** Local time for sleeping; the store keeps its own clock. */
  clock?: Clock;
  /**
   * Each lease is this long at the rate, so a busy process makes at most
   * 1000 / leaseMs round trips a second whatever the rate.
   */
  leaseMs?: number;
  /** How often the key's settings are read while no take brings them: live changes land within this. */
  pollMs?: number;
  /**
   * The key was made with `expireWhenFull` (one per client): when the store
   * has forgotten it, full again, it is made anew, full, with the settings
   * last read, instead of failing as a deleted key.
   */
  expireWhenFull?: boolean;
}

/**
 * SharedLimiter is a Limiter whose tokens come from a bucket in a store,
 * shared with every process that names the same key.
 *
 * Tokens are taken in leases of about `leaseMs` of the rate, so a fast pipe
 * costs at most ~50 round trips a second. Each lease is a reservation in the
 * store (first come, first served), so processes take turns and none
 * starves; all of them together keep the bucket's envelope, burst + rate·T,
 * plus at most the one lease each holds. Takes bring back the key's settings,
 * and a timer reads them while none is made, so `rate` and `burst` follow a
 * `tbucket key set` within `pollMs`; a wait already under way is rescaled to
 * the new rate. At a rate of 0 the key is paused: waits go on until the rate
 * is raised, then end when the debt ahead of them is repaid at the new rate.
 *
 * A lease not yet due when its wait is aborted, or when the limiter closes,
 * is cancelled in the store (x/time/rate's Cancel), so an interrupted process
 * leaves no debt behind for the others, nor for its own next run.
 *
 * tryWaits that come while the store is being asked go together in one
 * call (`takeMany`: one Redis script call), answered in order, as long as
 * none before them has to wait for its turn: a busy key that admits or
 * refuses at once costs a round trip per batch, not per request.
 *
 * When the store fails, the limiter stops: that wait and every later one
 * reject with the StoreError (a failed poll rejects the next wait). Going on
 * without the store is FailoverLimiter's business.
 */
export class SharedLimiter implements Limiter {
  readonly key: string;
  readonly #store: BucketStore;
  readonly #clock: Clock;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #expireWhenFull: boolean;
  #rate: number;
  #burst: number;
  #kind: RateKind;
  /** The level the store last reported. */
  #storeTokens: number;
  /** Tokens leased from the store and not yet used. */
  #heldTokens = 0;
  /** When the held tokens may be used, on the local clock; Infinity while the key is paused (rate 0). */
  #readyAtMs: number;
  /** While paused: the tokens owed ahead of the held ones, repaid at whatever rate the key gets next. */
  #pausedDebt = 0;
  /** The last lease while it is not yet due: what to give back if it goes unused. */
  #pending: { n: number; timeToActMs: number; readyAtBeforeMs: number } | undefined;
  /** The round trip under way, which close() lets finish before giving back its lease. */
  #taking: Promise<unknown> | undefined;
  #closed = false;
  #lastContactMs: number;
  /** What stopped the limiter: the store's failure, thrown by every wait from then on. */
  #failure: StoreError | undefined;
  readonly #line = new WaitLine();
  #timer: ReturnType<typeof setInterval> | undefined;
  #polling = false;
  /** tryWaits gathered while a batch is under way, to go together at the end of this turn of the event loop, in their order. */
  #batch: BatchedTake[] = [];
  /** Whether the batch is to be sent at the end of this turn of the event loop. */
  #batchDue = false;
  /** The batch calls under way: several may be, one behind the other on the connection, so the store answers them in order. */
  #sending = new Set<Promise<void>>();
  /** Batched takes granted and waiting for their turn, in the order of their turns. */
  #sleepers: Sleeper[] = [];
  /** Round trips made to the store, for benchmarks and tests. */
  roundTrips = 0;

  constructor(options: SharedLimiterOptions) {
    this.key = options.key;
    this.#store = options.store;
    this.#clock = options.clock ?? systemClock;
    this.#leaseMs = options.leaseMs ?? 20;
    this.#pollMs = options.pollMs ?? 500;
    this.#expireWhenFull = options.expireWhenFull ?? false;
    this.#rate = options.config.rate;
    this.#burst = options.config.burst;
    this.#kind = options.config.kind;
    // A paused key's slices are sized from its level (Throttle): a drained one must not look full.
    this.#storeTokens = options.config.tokens ?? options.config.burst;
    this.#readyAtMs = this.#clock.now();
    this.#lastContactMs = this.#clock.now();
  }

  /** The key's rate as last read; still readable after the store failed. */
  get rate(): number {
    return this.#rate;
  }

  get burst(): number {
    return this.#burst;
  }

  get kind(): RateKind {
    return this.#kind;
  }

  /** The level the store last reported (no round trip). */
  tokens(): number {
    return this.#storeTokens;
  }

  /** Reads the key's settings every `pollMs` while no take does; the timer never keeps the process alive. */
  startPolling(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#pollIfDue().catch(() => {}), this.#pollMs);
    this.#timer.unref?.();
  }

  /**
   * Stops polling and gives back a lease not yet due (a wait still sleeping
   * then rejects within `pollMs`). Await it before closing the store.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stopPolling();
    await Promise.all(this.#sending);
    await this.#taking?.catch(() => {});
    await this.#cancelPending();
    // The latest turn first: each is then the last reservation of the key, given back whole.
    for (const sleeper of this.#sleepers.splice(0).reverse()) {
      await this.#giveBack(sleeper.n, sleeper.timeToActMs);
      sleeper.wake.abort();
    }
  }

  #stopPolling(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async wait(n: number, signal?: AbortSignal): Promise<void> {
    // Checked before queueing: a negative count would add to the held tokens.
    checkCount(n);
    signal?.throwIfAborted();
    return this.#serialize(() => this.#waitOne(n, signal), signal);
  }

  /**
   * Waits for `n` tokens unless that would take longer than `maxWaitMs`: then
   * false, having taken nothing. Waits its turn behind the waits under way,
   * and that time counts against `maxWaitMs`: the limit runs from this call.
   */
  tryWait(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    // Not async: a batched take is one promise, from call to answer (every request of a server comes this way).
    try {
      checkCount(n);
      signal?.throwIfAborted();
    } catch (error) {
      return Promise.reject(error);
    }
    const calledAtMs = this.#clock.now();
    if (this.#mayBatch(maxWaitMs)) return this.#tryWaitBatched(n, maxWaitMs, calledAtMs, signal);
    return this.#tryWaitInLine(n, maxWaitMs, calledAtMs, signal);
  }

  /** A tryWait in the line of #serialize; the wait limit runs from the call, so time in the line counts. */
  #tryWaitInLine(n: number, maxWaitMs: number, calledAtMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    return this.#serialize(() => this.#tryWaitOne(n, Math.max(0, maxWaitMs - (this.#clock.now() - calledAtMs)), signal), signal);
  }

  /**
   * Whether a tryWait may go in the next batch: when no wait is in the line
   * (none holds a lease, none sleeps in it), each take is exactly what it
   * asks, so the store alone decides, and several can share one call.
   */
  #mayBatch(maxWaitMs: number): boolean {
    return (
      Number.isFinite(maxWaitMs) && this.#line.size === 0 && this.#sleepers.length === 0 && this.#heldTokens === 0 && this.#pending === undefined && this.#failure === undefined
    );
  }

  /**
   * A tryWait in a batch: alone it goes at once; behind a call under way it
   * goes with every tryWait of this turn of the event loop in one call (the
   * calls pipelined, not waiting for each other), so a busy key costs one
   * round trip per batch instead of one per request. The store answers the
   * takes in order, each as alone, so turns stay first come, first served,
   * and a refused take changes nothing. The wait limit runs from this call.
   * Once a take has to wait for its turn, the takes after it go in the line
   * behind it instead, as without batches (a busy key that queues is held
   * to its rate anyway; one that refuses is the one that needs the speed).
   */
  #tryWaitBatched(n: number, maxWaitMs: number, calledAtMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    if (this.#rate === Infinity) return Promise.resolve(true);
    if (n > this.#burst) return Promise.reject(new ExceedsBurstError(n, this.#burst));
    return new Promise<boolean>((resolve, reject) => {
      const take: BatchedTake = { n, maxWaitMs, calledAtMs, signal, resolve, reject, leave: undefined };
      if (signal) {
        take.leave = () => {
          // Given up before it was sent: it leaves the batch, having asked nothing.
          const index = this.#batch.indexOf(take);
          if (index === -1) return;
          this.#batch.splice(index, 1);
          reject(signal.reason);
        };
        signal.addEventListener("abort", take.leave, { once: true });
      }
      this.#batch.push(take);
      // Alone, it goes at once; behind a call under way, with all that comes in this turn of the event loop.
      if (this.#sending.size === 0) this.#sendBatch();
      else if (!this.#batchDue) {
        this.#batchDue = true;
        setImmediate(() => {
          this.#batchDue = false;
          this.#sendBatch();
        });
      }
    });
  }

  #sendBatch(): void {
    // A store that makes the takes one by one (no takeMany) is not asked again until it has answered: they must not interleave.
    if (this.#batch.length === 0 || (this.#sending.size > 0 && !this.#store.takeMany)) return;
    const takes = this.#batch.splice(0);
    for (const take of takes) if (take.leave) take.signal!.removeEventListener("abort", take.leave);
    if (this.#sleepers.length > 0) {
      // A take before them has to wait its turn: they wait behind it in the line, as unbatched waits do.
      for (const { n, maxWaitMs, calledAtMs, signal, resolve, reject } of takes) this.#tryWaitInLine(n, maxWaitMs, calledAtMs, signal).then(resolve, reject);
      return;
    }
    // #takeBatch never rejects: each take is answered, or rejected, on its own.
    const sending = this.#takeBatch(takes).then(() => {
      this.#sending.delete(sending);
      this.#sendBatch();
    });
    this.#sending.add(sending);
  }

  /** One call for the batch; never rejects (each take is answered or rejected). Not async: one promise on the store's. */
  #takeBatch(takes: BatchedTake[]): Promise<void> {
    const sentMs = this.#clock.now();
    if (this.#closed || this.#failure) {
      const error = this.#failure ?? this.#closedError();
      for (const take of takes) take.reject(error);
      return Promise.resolve();
    }
    const requests = takes.map((take) => ({ n: take.n, options: { maxWaitMs: Math.max(0, take.maxWaitMs - (sentMs - take.calledAtMs)) } }));
    const failed = (error: unknown): void => {
      const failure = this.#fail(error);
      for (const take of takes) take.reject(failure);
    };
    const answered = (results: TakeResult[] | undefined): void => {
      if (!results) return failed(this.#deletedError());
      this.#lastContactMs = this.#clock.now();
      for (let i = 0; i < takes.length; i++) {
        const take = takes[i]!;
        const result = results[i]!;
        this.#apply(result);
        this.#storeTokens = result.tokens;
        if (!result.ok) take.resolve(false);
        else if (result.rate === Infinity || result.waitMs <= 0) take.resolve(true);
        else take.resolve(this.#sleepTurn(take, sentMs + result.waitMs, result.timeToActMs));
      }
    };
    this.roundTrips++;
    let taking: Promise<TakeResult[] | undefined>;
    try {
      taking = this.#takeOrRemake(requests);
    } catch (error) {
      failed(error);
      return Promise.resolve();
    }
    return taking.then(answered, failed);
  }

  /** A batched take's wait for its turn; given up (its signal) or closed, its turn is given back. */
  async #sleepTurn(take: BatchedTake, readyAtMs: number, timeToActMs: number): Promise<boolean> {
    const { signal } = take;
    let finish!: () => void;
    const sleeper: Sleeper = { n: take.n, readyAtMs, pausedDebt: 0, timeToActMs, wake: new AbortController(), done: new Promise((resolve) => (finish = resolve)) };
    this.#sleepers.push(sleeper);
    const hangUp = (): void => sleeper.wake.abort();
    signal?.addEventListener("abort", hangUp, { once: true });
    try {
      for (;;) {
        // close() gave the turn back and took it out of the line.
        if (!this.#sleepers.includes(sleeper)) throw this.#closedError();
        if (signal?.aborted) {
          await this.#leaveTurn(sleeper);
          throw signal.reason;
        }
        const leftMs = sleeper.readyAtMs - this.#clock.now();
        if (leftMs <= 0) return true;
        try {
          // In steps of pollMs, reading the key between them: a rate changed meanwhile moves the turn.
          await this.#clock.sleep(Math.min(leftMs, this.#pollMs), sleeper.wake.signal);
        } catch {
          // Moved (an earlier turn, a new rate), given up or closed: seen above.
          sleeper.wake = new AbortController();
          continue;
        }
        if (leftMs > this.#pollMs) await this.#pollIfDue();
        this.#throwIfFailed();
      }
    } finally {
      signal?.removeEventListener("abort", hangUp);
      const index = this.#sleepers.indexOf(sleeper);
      if (index !== -1) this.#sleepers.splice(index, 1);
      finish();
    }
  }

  /**
   * Gives a sleeping take's turn back whole, whatever its place in line:
   * the store gives back only what no later reservation counts on (as
   * x/time/rate), so every one of ours behind it moves up a turn, first come
   * first served, and the last turn, now no one's, is given back (as the
   * core TurnQueue does). Turns of other sizes cannot move into each other:
   * then only what the store can give back of this one is.
   */
  async #leaveTurn(sleeper: Sleeper): Promise<void> {
    const sleepers = this.#sleepers;
    const index = sleepers.indexOf(sleeper);
    sleepers.splice(index, 1);
    const behind = sleepers.slice(index);
    let turn = { readyAtMs: sleeper.readyAtMs, pausedDebt: sleeper.pausedDebt, timeToActMs: sleeper.timeToActMs };
    if (behind.every((later) => later.n === sleeper.n)) {
      for (const later of behind) {
        const own = { readyAtMs: later.readyAtMs, pausedDebt: later.pausedDebt, timeToActMs: later.timeToActMs };
        Object.assign(later, turn);
        later.wake.abort();
        turn = own;
      }
    }
    await this.#giveBack(sleeper.n, turn.timeToActMs);
  }

  /** Waits until no batched take is being sent or sleeps: the line's waits hold leases of their own. */
  async #batchesDone(): Promise<void> {
    while (this.#sending.size > 0 || this.#batch.length > 0 || this.#sleepers.length > 0) {
      const due = this.#batch.length > 0 ? new Promise((resolve) => setImmediate(resolve)) : undefined;
      await Promise.all([...this.#sending, ...this.#sleepers.map((sleeper) => sleeper.done), due]);
    }
  }

  /**
   * One wait at a time (WaitLine), after the batched tryWaits before it. A
   * caller that gives up before its turn leaves the line at once (its turn,
   * when it comes, ends without asking the store).
   */
  #serialize<T>(operation: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.#line.run(operation, signal, () => this.#batchesDone());
  }

  async #waitOne(n: number, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    this.#throwIfFailed();
    if (this.#rate === Infinity) return;
    if (n > this.#burst) throw new ExceedsBurstError(n, this.#burst);
    if (this.#heldTokens < n) {
      const missing = n - this.#heldTokens;
      const lease = Math.max(missing, (this.#rate * this.#leaseMs) / 1000);
      await this.#take(lease, { overBurst: true });
      if (this.#rate === Infinity) return;
      this.#heldTokens += lease;
    }
    await this.#sleepOrCancel(signal);
    this.#heldTokens -= n;
  }

  /** Sleeps until the held tokens are due; a wait that ends early gives its lease back. */
  async #sleepOrCancel(signal: AbortSignal | undefined): Promise<void> {
    try {
      await this.#sleepUntilReady(signal);
    } catch (error) {
      await this.#cancelPending();
      throw error;
    }
    this.#pending = undefined;
  }

  /** Gives the lease not yet due back to the store; a store that fails has nothing left to give back to. */
  async #cancelPending(): Promise<void> {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    this.#heldTokens = Math.max(0, this.#heldTokens - pending.n);
    this.#readyAtMs = pending.readyAtBeforeMs;
    await this.#giveBack(pending.n, pending.timeToActMs);
  }

  /** Cancels a reservation in the store; a store that fails has nothing left to give back to. */
  async #giveBack(n: number, timeToActMs: number): Promise<void> {
    if (this.#failure) return;
    try {
      this.roundTrips++;
      await this.#store.cancel(this.key, { n, timeToActMs });
    } catch {
      // The store is gone: its debt goes with it, or expires.
    }
  }

  async #tryWaitOne(n: number, maxWaitMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    signal?.throwIfAborted();
    this.#throwIfFailed();
    if (this.#rate === Infinity) return true;
    if (n > this.#burst) throw new ExceedsBurstError(n, this.#burst);
    const aheadMs = Math.max(0, this.#readyAtMs - this.#clock.now());
    if (aheadMs > maxWaitMs) return false;
    if (this.#heldTokens < n) {
      // Exactly what is missing, with the limit: a refusal must take nothing.
      const missing = n - this.#heldTokens;
      const taken = await this.#take(missing, { maxWaitMs: maxWaitMs - aheadMs });
      if (taken === "refused") return false;
      if (this.#rate === Infinity) return true;
      this.#heldTokens += missing;
    }
    await this.#sleepOrCancel(signal);
    this.#heldTokens -= n;
    return true;
  }

  /**
   * Keeps the key's bucket empty until `pauseMs` from now, for every process
   * on it (the server's pushback, DESIGN 13), as SharedSetLimiter.emptyFor
   * does for a set: a take of 0 reads the level and the wait already queued,
   * then a lease never used takes what the bucket holds and what it would
   * gain over the rest of the pause. Overlapping pauses hold until the
   * latest, not their sum. Resolves to whether it was emptied.
   */
  async emptyFor(pauseMs: number): Promise<boolean> {
    this.#throwIfFailed();
    this.#throwIfClosed();
    if (!(pauseMs > 0) || !(this.#rate > 0) || !Number.isFinite(this.#rate)) return false;
    const sentMs = this.#clock.now();
    try {
      const marker = (await this.#takeOrRemake([{ n: 0 }]))?.[0];
      if (!marker?.ok || !Number.isFinite(marker.waitMs)) return false;
      const moreMs = pauseMs - (this.#clock.now() - sentMs) - marker.waitMs;
      if (moreMs <= 0) return true;
      const debt = Math.max(0, marker.tokens) + (marker.rate * moreMs) / 1000;
      const result = (await this.#takeOrRemake([{ n: debt, options: { overBurst: true } }]))?.[0];
      if (result) this.#storeTokens = result.tokens;
      return result?.ok === true;
    } catch (error) {
      throw this.#fail(error);
    }
  }

  /**
   * Lowers the key's level to at most `most`, for every process on it: what
   * the server said is left of its limit (DESIGN 13). A lease never used
   * takes what the bucket holds above it. Never raises the level. No round
   * trip when the level cannot be above `most`: as the store last reported
   * it, refilled since (what other processes give back aside), at most the burst. Resolves to
   * whether it lowered.
   */
  async capLevel(most: number): Promise<boolean> {
    this.#throwIfFailed();
    this.#throwIfClosed();
    const atMost = Math.min(this.#burst, this.#storeTokens + (this.#rate * Math.max(0, this.#clock.now() - this.#lastContactMs)) / 1000);
    if (!(most >= 0) || !(atMost > most)) return false;
    try {
      const marker = (await this.#takeOrRemake([{ n: 0 }]))?.[0];
      if (!marker?.ok || !(marker.tokens > most)) return false;
      const result = (await this.#takeOrRemake([{ n: marker.tokens - most }]))?.[0];
      if (result) {
        this.#storeTokens = result.tokens;
        this.#lastContactMs = this.#clock.now();
      }
      return result?.ok === true;
    } catch (error) {
      throw this.#fail(error);
    }
  }

  /** One round trip: takes `n` and moves the ready time; a store that fails stops the limiter. */
  async #take(n: number, options: { overBurst?: boolean; maxWaitMs?: number }): Promise<"taken" | "refused"> {
    this.#throwIfClosed();
    const sentMs = this.#clock.now();
    let result;
    try {
      this.roundTrips++;
      const taking = this.#takeOrRemake([{ n, options }]);
      this.#taking = taking;
      result = (await taking)?.[0];
      if (!result) throw this.#deletedError();
    } catch (error) {
      throw this.#fail(error);
    } finally {
      this.#taking = undefined;
    }
    this.#lastContactMs = this.#clock.now();
    this.#apply(result);
    this.#storeTokens = result.tokens;
    if (!result.ok) return "refused";
    if (result.waitMs > 0) this.#pending = { n, timeToActMs: result.timeToActMs, readyAtBeforeMs: this.#readyAtMs };
    // Owed at rate 0: due once the store's debt, this lease's included, is repaid at the next rate.
    if (result.waitMs === Infinity) this.#pausedDebt = Math.max(this.#pausedDebt, -result.tokens);
    this.#readyAtMs = Math.max(this.#readyAtMs, sentMs + result.waitMs);
    return "taken";
  }

  /** Takes; a key made per client and forgotten once full is made again (full, as it was) and taken from. */
  #takeOrRemake(takes: readonly TakeRequest[]): Promise<TakeResult[] | undefined> {
    const taking = takeInOrder(this.#store, this.key, takes);
    return this.#expireWhenFull ? taking.then((results) => results ?? this.#remake(takes)) : taking;
  }

  async #remake(takes: readonly TakeRequest[]): Promise<TakeResult[] | undefined> {
    this.roundTrips++;
    await this.#store.configure(this.key, { rate: this.#rate, burst: this.#burst, kind: this.#kind }, { expireWhenFull: true });
    this.roundTrips++;
    return takeInOrder(this.#store, this.key, takes);
  }

  /** Sleeps until the held tokens may be used, in steps of `pollMs` so a rate change shortens or stretches the wait. */
  async #sleepUntilReady(signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      const leftMs = this.#readyAtMs - this.#clock.now();
      if (leftMs <= 0) return;
      await this.#clock.sleep(Math.min(leftMs, this.#pollMs), signal);
      this.#throwIfClosed();
      if (leftMs > this.#pollMs) await this.#pollIfDue();
      this.#throwIfFailed();
    }
  }

  async #pollIfDue(): Promise<void> {
    if (this.#polling || this.#failure) return;
    if (this.#clock.now() - this.#lastContactMs < this.#pollMs) return;
    this.#polling = true;
    try {
      const state = await this.#store.read(this.key);
      if (!state && this.#expireWhenFull) {
        // Forgotten once full: it is full, with the settings it had; the next take makes it again.
        this.#lastContactMs = this.#clock.now();
        this.#storeTokens = this.#burst;
        return;
      }
      if (!state) throw this.#deletedError();
      this.#lastContactMs = this.#clock.now();
      this.#apply(state);
      this.#storeTokens = state.tokens;
    } catch (error) {
      // Recorded: the next wait throws it.
      this.#fail(error);
    } finally {
      this.#polling = false;
    }
  }

  /** Takes the key's current settings; a wait under way is rescaled to the new rate, or paused at rate 0. */
  #apply(settings: { rate: number; burst: number; kind: RateKind }): void {
    if (settings.rate !== this.#rate) {
      const nowMs = this.#clock.now();
      [this.#readyAtMs, this.#pausedDebt] = rescaledTurn(nowMs, this.#readyAtMs, this.#pausedDebt, this.#rate, settings.rate);
      for (const sleeper of this.#sleepers) {
        [sleeper.readyAtMs, sleeper.pausedDebt] = rescaledTurn(nowMs, sleeper.readyAtMs, sleeper.pausedDebt, this.#rate, settings.rate);
        sleeper.wake.abort();
      }
      // A lease sized for a much faster rate would hold too much at the slower one.
      if (settings.rate < this.#rate) this.#heldTokens = Math.min(this.#heldTokens, (settings.rate * this.#leaseMs) / 1000);
    }
    this.#rate = settings.rate;
    this.#burst = settings.burst;
    this.#kind = settings.kind;
  }

  /** Stops the limiter on the store's failure and returns it, for the caller to throw. */
  #fail(error: unknown): StoreError {
    // A poll and a take can fail together: the first failure is the one reported.
    if (this.#failure) return this.#failure;
    this.#failure =
      error instanceof StoreError
        ? error
        : new StoreError("lost", `store ${this.#store.url}: ${(error as Error)?.message ?? String(error)}`, { storeUrl: this.#store.url, key: this.key, cause: error });
    this.#stopPolling();
    return this.#failure;
  }

  #throwIfFailed(): void {
    if (this.#failure) throw this.#failure;
  }

  #throwIfClosed(): void {
    if (this.#closed) throw this.#closedError();
  }

  #closedError(): StoreError {
    return new StoreError("closed", `key "${this.key}": the limiter was closed while waiting`, { storeUrl: this.#store.url, key: this.key });
  }

  #deletedError(): StoreError {
    return new StoreError("deleted", `key "${this.key}": deleted from ${this.#store.url} while in use`, { storeUrl: this.#store.url, key: this.key });
  }
}

/**
 * A turn `readyAtMs` away at `oldRate` (or, paused, `pausedDebt` tokens
 * away), moved to when that debt is repaid at `newRate`: Infinity while
 * paused, with the debt kept for the next rate.
 */
function rescaledTurn(nowMs: number, readyAtMs: number, pausedDebt: number, oldRate: number, newRate: number): [readyAtMs: number, pausedDebt: number] {
  const leftMs = readyAtMs - nowMs;
  if (leftMs <= 0) return [readyAtMs, pausedDebt];
  // The debt ahead of us, (left × old rate) tokens, is now repaid at the new rate.
  const debt = readyAtMs === Infinity ? pausedDebt : (leftMs * oldRate) / 1000;
  return [newRate === 0 ? Infinity : newRate === Infinity ? nowMs : nowMs + (debt * 1000) / newRate, newRate === 0 ? debt : 0];
}

/** A tryWait waiting to be sent in a batch. */
interface BatchedTake {
  n: number;
  maxWaitMs: number;
  /** When it was asked, on the local clock: its wait limit runs from then. */
  calledAtMs: number;
  signal: AbortSignal | undefined;
  resolve: (granted: boolean | Promise<boolean>) => void;
  reject: (error: unknown) => void;
  /** Takes it out of the batch when its signal aborts before it is sent (none without a signal). */
  leave: (() => void) | undefined;
}

/** A batched take granted with a wait: it sleeps until its turn, which it gives back if given up. */
interface Sleeper {
  n: number;
  /** Its turn on the local clock: rescaled when the key's rate changes, Infinity while it is paused. */
  readyAtMs: number;
  /** While paused: the tokens owed ahead of it and its own, repaid at the next rate. */
  pausedDebt: number;
  /** Its turn on the store's clock, for `cancel`. */
  timeToActMs: number;
  /** Aborted to end its sleep: given up, moved to an earlier turn, or the limiter closed. */
  wake: AbortController;
  /** Resolved once it no longer sleeps. */
  done: Promise<void>;
}
