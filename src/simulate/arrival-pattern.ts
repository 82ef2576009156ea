/**
 * The `--arrivals` pattern language: segments separated by commas, played one
 * after the other on a timeline that starts at 0.
 *
 *   steady 8/s for 10s       evenly spaced, the first at the segment's start
 *   idle 5s                  nothing for a while
 *   burst 30                 30 arrivals at one instant
 *   poisson 4/s for 30s      random arrivals (exponential gaps), seeded by --seed
 *   ramp 1/s..20/s for 20s   the rate rising (or falling) linearly
 */

import { grouped } from "../core/format.js";
import { parseCount, parseCountRate, parseDuration, UnitError } from "../core/units.js";
import { type ArrivalSource, BatchBuilder, type EventBatch } from "./event-batch.js";
import { createRandom } from "./prng.js";

/** One segment of a pattern, parsed: rates per second, durations in ms. */
export type Segment =
  | { kind: "steady"; perSecond: number; durationMs: number }
  | { kind: "idle"; durationMs: number }
  | { kind: "burst"; count: number }
  | { kind: "poisson"; perSecond: number; durationMs: number }
  | { kind: "ramp"; fromPerSecond: number; toPerSecond: number; durationMs: number };

export const PATTERN_EXAMPLE = `try "steady 8/s for 10s", "idle 5s", "burst 30", "poisson 4/s for 30s" or "ramp 1/s..20/s for 20s"`;

/** More arrivals than this is surely a typo ("steady 8000000/s for 1d"). */
export const MAX_PATTERN_EVENTS = 1e9;

/** Parses a pattern; throws UnitError naming the segment and what was expected. */
export function parsePattern(text: string): Segment[] {
  const parts = text.split(",").map((part) => part.trim());
  if (parts.length === 0 || parts.every((part) => part === "")) {
    throw new UnitError(`"${text}" has no segments; ${PATTERN_EXAMPLE}`);
  }
  const segments = parts.map((part, index) => parseSegment(part, index + 1));
  const total = segments.reduce((sum, segment) => sum + expectedEvents(segment), 0);
  if (total > MAX_PATTERN_EVENTS) {
    throw new UnitError(`"${text}" makes about ${grouped(Math.round(total))} arrivals, more than ${grouped(MAX_PATTERN_EVENTS)}; use a lower rate or a shorter time`);
  }
  return segments;
}

function parseSegment(text: string, position: number): Segment {
  const where = `segment ${position} "${text}"`;
  const words = text.split(/\s+/);
  const keyword = words[0]!.toLowerCase();
  const value = <T>(parse: (t: string) => T, t: string): T => {
    try {
      return parse(t);
    } catch (error) {
      throw new UnitError(`${where}: ${(error as Error).message}`);
    }
  };
  const expect = (shape: string) => new UnitError(`${where}: expected "${shape}"; ${PATTERN_EXAMPLE}`);
  switch (keyword) {
    case "steady":
    case "poisson": {
      const match = /^\S+\s+(\S+)\s+for\s+(\S+)$/i.exec(text);
      if (!match) throw expect(`${keyword} <rate> for <duration>`);
      const perSecond = value(parseCountRate, match[1]!);
      if (perSecond === Infinity) throw new UnitError(`${where}: the rate must be finite; try "8/s"`);
      return { kind: keyword, perSecond, durationMs: value(parseDuration, match[2]!) };
    }
    case "idle": {
      if (words.length !== 2) throw expect("idle <duration>");
      return { kind: "idle", durationMs: value(parseDuration, words[1]!) };
    }
    case "burst": {
      if (words.length !== 2) throw expect("burst <count>");
      return { kind: "burst", count: value((t) => parseCount(t), words[1]!) };
    }
    case "ramp": {
      const match = /^ramp\s+(\S+?)\s*\.\.\s*(\S+)\s+for\s+(\S+)$/i.exec(text);
      if (!match) throw expect("ramp <rate>..<rate> for <duration>");
      const fromPerSecond = value(parseRampRate, match[1]!);
      const toPerSecond = value(parseRampRate, match[2]!);
      if (fromPerSecond === 0 && toPerSecond === 0) throw new UnitError(`${where}: both rates are zero; use "idle" instead`);
      return { kind: "ramp", fromPerSecond, toPerSecond, durationMs: value(parseDuration, match[3]!) };
    }
    default:
      throw new UnitError(`${where}: "${words[0]}" is not a kind of segment; ${PATTERN_EXAMPLE}`);
  }
}

/** A ramp may start or end at zero ("ramp 0..50/s for 1m"). */
function parseRampRate(text: string): number {
  if (/^0+(\.0*)?(\/\w+)?$/.test(text.trim())) return 0;
  const perSecond = parseCountRate(text);
  if (perSecond === Infinity) throw new UnitError(`"${text}" is not a finite rate; try "20/s"`);
  return perSecond;
}

function expectedEvents(segment: Segment): number {
  switch (segment.kind) {
    case "steady":
    case "poisson":
      return (segment.perSecond * segment.durationMs) / 1000;
    case "ramp":
      return (((segment.fromPerSecond + segment.toPerSecond) / 2) * segment.durationMs) / 1000;
    case "burst":
      return segment.count;
    case "idle":
      return 0;
  }
}

/** The length of the whole pattern: where its timeline ends. */
export function patternDurationMs(segments: readonly Segment[]): number {
  return segments.reduce((sum, segment) => sum + ("durationMs" in segment ? segment.durationMs : 0), 0);
}

/**
 * The arrival times of a pattern, in order, in milliseconds on whole
 * nanoseconds. Random segments draw from one generator seeded once, so the
 * same pattern and seed always give the same times.
 */
export function* patternTimesMs(segments: readonly Segment[], seed: number): Generator<number> {
  const random = createRandom(seed);
  let startNs = 0;
  for (const segment of segments) {
    switch (segment.kind) {
      case "idle":
        break;
      case "burst":
        for (let i = 0; i < segment.count; i++) yield startNs / 1e6;
        break;
      case "steady": {
        // Arrival i at i/R seconds, for every i with i/R < D; the tolerance keeps "8/s for 7.5s" at 60.
        const count = Math.ceil((segment.perSecond * segment.durationMs) / 1000 - 1e-6);
        for (let i = 0; i < count; i++) yield (startNs + Math.round((i * 1e9) / segment.perSecond)) / 1e6;
        break;
      }
      case "poisson": {
        const endSeconds = segment.durationMs / 1000;
        let seconds = 0;
        for (;;) {
          seconds += -Math.log(1 - random()) / segment.perSecond;
          if (seconds >= endSeconds) break;
          yield (startNs + Math.round(seconds * 1e9)) / 1e6;
        }
        break;
      }
      case "ramp": {
        // Arrival k where the expected count R1·t + (R2−R1)·t²/(2D) reaches k, solved in a form stable when R1 = R2.
        const endSeconds = segment.durationMs / 1000;
        const a = (segment.toPerSecond - segment.fromPerSecond) / (2 * endSeconds);
        const b = segment.fromPerSecond;
        for (let k = 0; ; k++) {
          const root = Math.sqrt(b * b + 4 * a * k);
          const seconds = k === 0 ? 0 : (2 * k) / (b + root);
          if (!(seconds < endSeconds)) break;
          yield (startNs + Math.round(seconds * 1e9)) / 1e6;
        }
        break;
      }
    }
    if ("durationMs" in segment) startNs += Math.round(segment.durationMs * 1e6);
  }
}

/** A pattern as an arrival source: every arrival costs one token and has no key. */
export async function* patternArrivals(segments: readonly Segment[], seed: number, batchSize = 65_536): ArrivalSource {
  const builder = new BatchBuilder(batchSize, false);
  for (const timeMs of patternTimesMs(segments, seed)) {
    builder.push(timeMs, 1, undefined);
    if (builder.full) yield builder.take() as EventBatch;
  }
  if (builder.count > 0) yield builder.take();
}
