/**
 * How many distinct keys a run saw, in bounded memory: exact up to
 * EXACT_DISTINCT keys, then a HyperLogLog estimate (Flajolet et al., 2^14
 * registers of one byte, a standard error of 0.8 %) that no longer holds the
 * keys themselves. With --max-keys the buckets forget evicted keys, so the
 * keys seen cannot be counted from them.
 */

/** Keys counted exactly, each held; past this the count is an estimate. */
export const EXACT_DISTINCT = 100_000;

const REGISTER_BITS = 14;
const REGISTERS = 1 << REGISTER_BITS;
const ALPHA = 0.7213 / (1 + 1.079 / REGISTERS);

export class DistinctCounter {
  #exact: Set<string> | undefined = new Set();
  #registers: Uint8Array | undefined;

  constructor(readonly exactLimit = EXACT_DISTINCT) {}

  add(key: string): void {
    if (this.#exact) {
      this.#exact.add(key);
      if (this.#exact.size <= this.exactLimit) return;
      this.#registers = new Uint8Array(REGISTERS);
      for (const seen of this.#exact) this.#addHashed(seen);
      this.#exact = undefined;
      return;
    }
    this.#addHashed(key);
  }

  /** Whether `count` is exact rather than an estimate. */
  get exact(): boolean {
    return this.#exact !== undefined;
  }

  get count(): number {
    if (this.#exact) return this.#exact.size;
    const registers = this.#registers!;
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < REGISTERS; i++) {
      sum += 2 ** -registers[i]!;
      if (registers[i] === 0) zeros++;
    }
    const estimate = (ALPHA * REGISTERS * REGISTERS) / sum;
    // Few keys for the registers: linear counting is the better estimate.
    if (estimate <= 2.5 * REGISTERS && zeros > 0) return Math.round(REGISTERS * Math.log(REGISTERS / zeros));
    // Near 2^32 the 32-bit hashes collide: correct for it.
    if (estimate > 2 ** 32 / 30) return Math.round(-(2 ** 32) * Math.log(1 - estimate / 2 ** 32));
    return Math.round(estimate);
  }

  #addHashed(key: string): void {
    const hash = hash32(key);
    const index = hash >>> (32 - REGISTER_BITS);
    // The rank of the first 1 bit in the rest of the hash, from 1; 19 when the rest is all zeros.
    const rest = (hash << REGISTER_BITS) | (1 << (REGISTER_BITS - 1));
    const rank = Math.clz32(rest) + 1;
    if (rank > this.#registers![index]!) this.#registers![index] = rank;
  }
}

/** FNV-1a over the UTF-16 code units, then murmur3's finalizer to spread the bits. */
function hash32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
