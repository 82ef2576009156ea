// The one way commands take signals. Signals are emitted to this process's listeners only
// (process.emit), never sent: nothing here can end the test run.
import { afterEach, describe, expect, it } from "vitest";
import { onStopSignal, signalExitStatus } from "../../src/cli/signals.js";

const TAKEN: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
const listeners = () => Object.fromEntries(TAKEN.map((signal) => [signal, process.listenerCount(signal)]));
const NONE = { SIGINT: 0, SIGTERM: 0, SIGHUP: 0, SIGQUIT: 0 };

let disposers: Array<() => void> = [];
afterEach(() => {
  for (const dispose of disposers) dispose();
  disposers = [];
});

function heard(options?: Parameters<typeof onStopSignal>[1]): Array<[NodeJS.Signals, boolean]> {
  const calls: Array<[NodeJS.Signals, boolean]> = [];
  disposers.push(onStopSignal((signal, again) => calls.push([signal, again]), options));
  return calls;
}

const emit = (signal: NodeJS.Signals) => process.emit(signal, signal);

describe("onStopSignal", () => {
  it("takes SIGINT, SIGTERM and SIGHUP, tells the first from every later one, and gives them all back", () => {
    const calls = heard();
    expect(listeners()).toEqual({ ...NONE, SIGINT: 1, SIGTERM: 1, SIGHUP: 1 });
    emit("SIGTERM");
    emit("SIGTERM");
    emit("SIGINT");
    emit("SIGHUP");
    expect(calls).toEqual([
      ["SIGTERM", false],
      ["SIGTERM", true],
      ["SIGINT", true],
      ["SIGHUP", true],
    ]);
    disposers.pop()!();
    expect(listeners()).toEqual(NONE);
  });

  it("takes the signals asked for besides (run's SIGQUIT), and gives them back too", () => {
    const calls = heard({ also: ["SIGQUIT"] });
    expect(listeners()).toEqual({ SIGINT: 1, SIGTERM: 1, SIGHUP: 1, SIGQUIT: 1 });
    emit("SIGQUIT");
    expect(calls).toEqual([["SIGQUIT", false]]);
    disposers.pop()!();
    expect(listeners()).toEqual(NONE);
  });

  it("leaves unheard the first signal repeated at once (timeout's second delivery), not another signal", () => {
    const calls = heard({ sameDeliveryWithinMs: 60_000 });
    emit("SIGTERM");
    emit("SIGTERM");
    emit("SIGINT");
    emit("SIGINT");
    expect(calls).toEqual([
      ["SIGTERM", false],
      ["SIGINT", true],
      ["SIGINT", true],
    ]);
  });
});

describe("signalExitStatus", () => {
  it("is 128 + the signal's number, as a shell reports a process the signal ended", () => {
    expect([signalExitStatus("SIGINT"), signalExitStatus("SIGTERM"), signalExitStatus("SIGHUP"), signalExitStatus("SIGQUIT")]).toEqual([130, 143, 129, 131]);
  });
});
