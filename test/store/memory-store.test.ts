import { FakeClock } from "../../src/core/clock.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { describeStoreConformance } from "./conformance.js";

describeStoreConformance("MemoryStore", async () => {
  const clock = new FakeClock();
  return { store: new MemoryStore({ clock }), clock };
});
