import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { ConnectionSlots, type SlotDecision } from "../../src/proxy/connection-slots.js";

/** Each acquire's outcome as it settles: "ok@<ms>", "refused@<ms>" or "left@<ms>". */
function track(clock: FakeClock, decision: Promise<SlotDecision>, log: string[], name: string): Promise<SlotDecision | undefined> {
  return decision.then(
    (slot) => {
      log.push(`${name} ${slot.ok ? "ok" : "refused"}@${clock.now()}`);
      return slot;
    },
    () => {
      log.push(`${name} left@${clock.now()}`);
      return undefined;
    },
  );
}

const held = (slot: SlotDecision | undefined) => {
  if (!slot?.ok) throw new Error("expected a slot");
  return slot;
};

describe("ConnectionSlots", () => {
  it("serves waiters first come, first served: each leaver's slot goes to the first waiter", async () => {
    const clock = new FakeClock();
    const slots = new ConnectionSlots({ scope: "link", n: 2, maxWaitMs: 10_000, clock });
    const log: string[] = [];
    const never = new AbortController().signal;
    const a = held(await slots.acquire("127.0.0.1", never));
    const b = held(await slots.acquire("127.0.0.2", never));
    const c = track(clock, slots.acquire("127.0.0.3", never), log, "c");
    await clock.advance(10);
    const d = track(clock, slots.acquire("127.0.0.4", never), log, "d");
    await clock.advance(100);
    expect(log).toEqual([]);
    b.release();
    await clock.advance(0);
    expect(log).toEqual(["c ok@110"]);
    expect((await c)?.waitMs).toBe(110);
    a.release();
    await clock.advance(0);
    expect(log).toEqual(["c ok@110", "d ok@110"]);
    // A release twice gives back one slot.
    a.release();
    const e = track(clock, slots.acquire("127.0.0.5", never), log, "e");
    await clock.advance(0);
    expect(log).toHaveLength(2);
    held(await c).release();
    expect((await e)?.ok).toBe(true);
    held(await d).release();
  });

  it("refuses at once without --max-wait, and after --max-wait with one, having taken nothing", async () => {
    const clock = new FakeClock();
    const never = new AbortController().signal;
    const now = new ConnectionSlots({ scope: "link", n: 1, maxWaitMs: 0, clock });
    const first = held(await now.acquire("127.0.0.1", never));
    expect(await now.acquire("127.0.0.2", never)).toEqual({ ok: false, waitMs: 0 });
    first.release();
    held(await now.acquire("127.0.0.2", never)).release();

    const waiting = new ConnectionSlots({ scope: "link", n: 1, maxWaitMs: 500, clock });
    const log: string[] = [];
    const holder = held(await waiting.acquire("127.0.0.1", never));
    const late = track(clock, waiting.acquire("127.0.0.2", never), log, "late");
    await clock.advance(499);
    expect(log).toEqual([]);
    await clock.advance(1);
    expect(log).toEqual([`late refused@${clock.now()}`]);
    expect((await late)?.waitMs).toBe(500);
    // The refused one left the line: the next release finds no one, and a newcomer takes the slot at once.
    holder.release();
    held(await waiting.acquire("127.0.0.3", never)).release();
  });

  it("a waiter that hangs up leaves the line: its turn is not kept, the one behind it gets the next slot", async () => {
    const clock = new FakeClock();
    const slots = new ConnectionSlots({ scope: "link", n: 1, maxWaitMs: 10_000, clock });
    const never = new AbortController().signal;
    const log: string[] = [];
    const holder = held(await slots.acquire("127.0.0.1", never));
    const hangsUp = new AbortController();
    const gone = track(clock, slots.acquire("127.0.0.2", hangsUp.signal), log, "gone");
    const next = track(clock, slots.acquire("127.0.0.3", never), log, "next");
    await clock.advance(50);
    hangsUp.abort();
    await clock.advance(0);
    expect(log).toEqual(["gone left@50"]);
    expect(await gone).toBeUndefined();
    holder.release();
    await clock.advance(0);
    expect(log).toEqual(["gone left@50", "next ok@50"]);
    held(await next).release();
  });

  it("--max-wait counts what a connection already waited for another limit", async () => {
    const clock = new FakeClock();
    const slots = new ConnectionSlots({ scope: "link", n: 1, maxWaitMs: 500, clock });
    const never = new AbortController().signal;
    const log: string[] = [];
    const holder = held(await slots.acquire("127.0.0.1", never));
    void track(clock, slots.acquire("127.0.0.2", never, 400), log, "late");
    await clock.advance(100);
    expect(log).toEqual(["late refused@100"]);
    holder.release();
  });

  it("--per client: each client address has its own slots, dropped once none is held or awaited", async () => {
    const clock = new FakeClock();
    const slots = new ConnectionSlots({ scope: "client", n: 1, maxWaitMs: 0, clock });
    const never = new AbortController().signal;
    const a = held(await slots.acquire("127.0.0.1", never));
    expect((await slots.acquire("127.0.0.1", never)).ok).toBe(false);
    const b = held(await slots.acquire("127.0.0.2", never));
    expect(slots.liveKeys).toBe(2);
    a.release();
    b.release();
    expect(slots.liveKeys).toBe(0);
    await slots.close();
  });

  it("a store's slots that fail to open reject the connection, and the next one opens them afresh", async () => {
    const clock = new FakeClock();
    let calls = 0;
    const slots = new ConnectionSlots({
      scope: "link",
      n: 1,
      maxWaitMs: 0,
      clock,
      open: () => {
        if (++calls === 1) throw new Error("store away");
        return { acquire: async () => () => {}, close: async () => {} };
      },
    });
    const never = new AbortController().signal;
    await expect(slots.acquire("127.0.0.1", never)).rejects.toThrow("store away");
    expect((await slots.acquire("127.0.0.1", never)).ok).toBe(true);
    expect(calls).toBe(2);
  });
});
