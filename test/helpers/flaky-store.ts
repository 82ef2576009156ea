import { StoreError } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";

/** A memory store that fails every call while `down`, and may come back empty, as a Redis restarted without saving. */
export class FlakyStore extends MemoryStore {
  down = false;
  #check(): void {
    if (this.down) throw new StoreError("lost", "store memory: lost", { storeUrl: "memory:" });
  }
  override async take(...args: Parameters<MemoryStore["take"]>) {
    this.#check();
    return super.take(...args);
  }
  override async cancel(...args: Parameters<MemoryStore["cancel"]>) {
    this.#check();
    return super.cancel(...args);
  }
  override async read(...args: Parameters<MemoryStore["read"]>) {
    this.#check();
    return super.read(...args);
  }
  override async configure(...args: Parameters<MemoryStore["configure"]>) {
    this.#check();
    return super.configure(...args);
  }
  override async takeSet(...args: Parameters<MemoryStore["takeSet"]>) {
    this.#check();
    return super.takeSet(...args);
  }
  override async cancelSet(...args: Parameters<MemoryStore["cancelSet"]>) {
    this.#check();
    return super.cancelSet(...args);
  }
  override async readSet(...args: Parameters<MemoryStore["readSet"]>) {
    this.#check();
    return super.readSet(...args);
  }
  override async configureSet(...args: Parameters<MemoryStore["configureSet"]>) {
    this.#check();
    return super.configureSet(...args);
  }
  async restartEmpty(): Promise<void> {
    for (const bucket of await super.list()) await super.delete(bucket.key);
  }
  override async takeClass(...args: Parameters<MemoryStore["takeClass"]>) {
    this.#check();
    return super.takeClass(...args);
  }
  override async configureClasses(...args: Parameters<MemoryStore["configureClasses"]>) {
    this.#check();
    return super.configureClasses(...args);
  }
}
