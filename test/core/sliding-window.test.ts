import { describe, expect, it } from "vitest";
import { SlidingWindow } from "../../src/core/sliding-window.js";

describe("SlidingWindow", () => {
  it("admits at t when (t - W, t] plus the item fits: exact and sliding, never 2N across a boundary", () => {
    const window = new SlidingWindow(3, 1000);
    for (const atMs of [900, 950, 999]) {
      expect(window.earliestAt(atMs, 1)).toBe(atMs);
      window.recordAt(atMs, 1);
    }
    // A fixed window would start afresh at 1000; this one waits for the record at 900 to leave.
    window.pruneAt(1000);
    expect(window.earliestAt(1000, 1)).toBe(1900);
    expect(window.earliestAt(1000, 2)).toBe(1950);
    expect(window.earliestAt(1000, 3)).toBe(1999);
    expect(window.earliestAt(1000, 4)).toBe(Infinity);
    expect(window.remainingAt(1000)).toBe(0);
    expect(window.remainingAt(1900)).toBe(1);
  });

  it("never answers before its latest record (first come, first served)", () => {
    const window = new SlidingWindow(10, 1000);
    window.recordAt(5000, 6);
    expect(window.earliestAt(100, 1)).toBe(5000);
  });

  it("asked about the future it prunes nothing, so a refusal or a cancel finds every record again", () => {
    const window = new SlidingWindow(2, 1000);
    window.recordAt(0, 1);
    window.recordAt(10, 1);
    expect(window.earliestAt(5000, 1)).toBe(5000);
    expect(window.records).toBe(2);
    expect(window.earliestAt(500, 1)).toBe(1000);
  });

  it("adjusts a record in place, never below zero; a forgotten latest record stops holding later items back", () => {
    const window = new SlidingWindow(4, 1000);
    window.recordAt(0, 2);
    window.recordAt(300, 2);
    window.adjustAt(300, -5);
    expect(window.records).toBe(1);
    expect(window.earliestAt(100, 2)).toBe(100);
    window.adjustAt(0, 3);
    expect(window.earliestAt(100, 1)).toBe(1000);
    // A record that already left is not there to adjust.
    window.pruneAt(2000);
    window.adjustAt(0, 10);
    expect(window.remainingAt(2000)).toBe(4);
  });

  it("merges records at one instant and records no zero cost: at most N records with whole costs", () => {
    const window = new SlidingWindow(100, 1000);
    for (let i = 0; i < 100; i++) window.recordAt(7, 1);
    window.recordAt(8, 0);
    expect(window.records).toBe(1);
    expect(window.remainingAt(7)).toBe(0);
  });

  it("grows its ring past 16 records and keeps them in order", () => {
    const window = new SlidingWindow(1000, 10_000);
    for (let i = 0; i < 40; i++) window.recordAt(i * 10, 1);
    window.pruneAt(10_005);
    expect(window.records).toBe(39);
    window.adjustAt(390, -1);
    expect(window.records).toBe(38);
    expect(window.remainingAt(10_005)).toBe(1000 - 38);
  });

  it("refuses a bad limit or window, naming it", () => {
    expect(() => new SlidingWindow(-1, 1000)).toThrow("Expected `n` to be a non-negative finite number, got `-1` (number)");
    expect(() => new SlidingWindow(1, 0)).toThrow("Expected `windowMs` to be a positive finite number, got `0` (number)");
  });
});

describe("SlidingWindow with a queue reaching ahead", () => {
  it("counts only what is in the window as of its latest record, and takes back what a cancelled latest record let go", () => {
    const window = new SlidingWindow(2, 1000);
    // A queue: records 1 s apart, each admitted when the one two before it left.
    for (const atMs of [0, 0, 1000, 1000, 2000, 2000]) {
      expect(window.earliestAt(0, 1)).toBe(atMs);
      window.recordAt(atMs, 1);
    }
    expect(window.earliestAt(0, 1)).toBe(3000);
    // Cancelling the two at 2000: as of the latest record (1000) the window holds the two at 1000 again.
    window.adjustAt(2000, -2);
    expect(window.latestMs).toBe(1000);
    expect(window.earliestAt(0, 1)).toBe(2000);
    expect(window.earliestAt(0, 2)).toBe(2000);
    window.recordAt(2000, 1);
    expect(window.earliestAt(0, 1)).toBe(2000);
    expect(window.earliestAt(0, 2)).toBe(3000);
  });

  it("roomAt: when the k-th next unit could go, the k-th oldest record leaving, and one window later for each n past the limit", () => {
    const window = new SlidingWindow(3, 1000);
    for (const atMs of [100, 200, 300]) window.recordAt(atMs, 1);
    expect([1, 2, 3].map((amount) => window.roomAt(500, amount))).toEqual([1100, 1200, 1300]);
    expect([4, 5, 6, 7].map((amount) => window.roomAt(500, amount))).toEqual([2100, 2200, 2300, 3100]);
    expect(window.roomAt(500, 0)).toBe(500);
    expect(new SlidingWindow(0, 1000).roomAt(0, 1)).toBe(Infinity);
  });
});
