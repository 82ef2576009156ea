import { describe, expect, it } from "vitest";
import { KeyTable } from "../../src/core/key-table.js";

interface Value {
  spent: boolean;
}

function table(maxKeys: number, removed: string[] = []): KeyTable<Value> {
  return new KeyTable<Value>({ maxKeys, isSpent: (value) => value.spent, onRemove: (key) => removed.push(key) });
}

describe("KeyTable", () => {
  it("evicts the least recently used key when full, counting an eviction only when its value was not spent", () => {
    const removed: string[] = [];
    const keys = table(2, removed);
    keys.set("a", { spent: false });
    keys.set("b", { spent: false });
    keys.get("a");
    keys.set("c", { spent: false });
    expect([...keys.entries()].map(([key]) => key)).toEqual(["a", "c"]);
    expect(removed).toEqual(["b"]);
    expect(keys.evictions).toBe(1);
  });

  it("drops spent values from the old end on each new key, before evicting anything", () => {
    const removed: string[] = [];
    const keys = table(3, removed);
    keys.set("a", { spent: true });
    keys.set("b", { spent: false });
    keys.set("c", { spent: false });
    keys.set("d", { spent: false });
    expect(removed).toEqual(["a"]);
    expect(keys.evictions).toBe(0);
    expect(keys.size).toBe(3);
  });

  it("sweeps only from the old end, stopping at the first value still in use", () => {
    const keys = table(10);
    const a = { spent: false };
    const c = { spent: false };
    keys.set("a", a);
    keys.set("b", { spent: false });
    keys.set("c", c);
    a.spent = c.spent = true;
    expect(keys.sweep()).toBe(1);
    expect([...keys.entries()].map(([key]) => key)).toEqual(["b", "c"]);
  });

  it("peek leaves the order alone; delete and clear tell onRemove", () => {
    const removed: string[] = [];
    const keys = table(2, removed);
    keys.set("a", { spent: false });
    keys.set("b", { spent: false });
    keys.peek("a");
    keys.set("c", { spent: false });
    expect(removed).toEqual(["a"]);
    expect(keys.delete("b")).toBe(true);
    expect(keys.delete("b")).toBe(false);
    keys.clear();
    expect(removed).toEqual(["a", "b", "c"]);
    expect(keys.size).toBe(0);
  });

  it("holds at most maxKeys whatever the number of distinct keys", () => {
    const keys = table(1000);
    for (let i = 0; i < 100_000; i++) keys.set(`10.0.${i >> 8}.${i & 255}`, { spent: false });
    expect(keys.size).toBe(1000);
    expect(keys.evictions).toBe(99_000);
  });

  it("rejects a maxKeys that is not a positive integer, naming it", () => {
    expect(() => table(0)).toThrow("Expected `maxKeys` to be a positive integer, got `0` (number)");
    expect(() => table(1.5)).toThrow(RangeError);
  });
});
