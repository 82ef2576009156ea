import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Past this share of the heap in use, a full collection tells what is live from garbage. */
const CHECK_SHARE = 0.85;
/** What is live past this share ends the run while it can still say why. */
const LIVE_SHARE = 0.75;

/**
 * Out of heap, V8 ends the process with a page of its own stack trace. A
 * simulation that holds a bucket per key (--max-keys raised, a small
 * --max-old-space-size) asks between batches whether the heap is nearly full
 * of what it holds, so that it can stop with one line that says what to do.
 */
export class HeapGuard {
  /** The old generation's limit (--max-old-space-size): V8's limit less its young generation, 3 semi-spaces of 16 MiB by default. */
  readonly limitBytes = getHeapStatistics().heap_size_limit - 3 * 16 * 2 ** 20;
  #collect: (() => void) | undefined;

  /** True when what is live takes nearly all the heap; costs a full collection only when the heap is nearly full. */
  nearlyFull(): boolean {
    if (getHeapStatistics().used_heap_size < this.limitBytes * CHECK_SHARE) return false;
    this.#collect ??= exposedCollector();
    this.#collect();
    return getHeapStatistics().used_heap_size >= this.limitBytes * LIVE_SHARE;
  }
}

/** V8's full collection, which --expose-gc gives to contexts made after it is set. */
function exposedCollector(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}
