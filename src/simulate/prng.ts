/**
 * A small seeded random generator (sfc32, seeded through splitmix32) so that
 * `--seed` gives the same arrivals on every machine and Node version;
 * Math.random cannot be seeded.
 */
export function createRandom(seed: number): () => number {
  // Both halves of a seed up to 2^53 matter.
  let state = (seed % 2 ** 32) >>> 0;
  const high = Math.floor(seed / 2 ** 32) >>> 0;
  const splitmix = (): number => {
    state = (state + 0x9e3779b9) | 0;
    let z = state ^ high;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix();
  let b = splitmix();
  let c = splitmix();
  let d = splitmix();
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 2 ** 32;
  };
  // The first outputs of a fresh sfc32 are weakly mixed.
  for (let i = 0; i < 12; i++) next();
  return next;
}
