import { describe, expect, it } from "vitest";
import { STORE_BACKENDS } from "../../src/store/backends.js";
import { parseStoreLocation } from "../../src/store/open-store.js";
import { StoreUrlError } from "../../src/store/store-url-error.js";

describe("parseStoreLocation", () => {
  it("checks a Redis address when it parses the store", () => {
    expect(parseStoreLocation("redis://db:6379/3")).toEqual({ type: "redis", url: "redis://db:6379/3" });
    expect(() => parseStoreLocation("redis://db:6379/x")).toThrow(StoreUrlError);
  });

  it("refuses options after a SQLite path, which would end up in the file's name", () => {
    expect(() => parseStoreLocation("sqlite:/tmp/x.db?mode=ro")).toThrow(
      `"sqlite:/tmp/x.db?mode=ro": options after "?" are not read; name the file alone, as in sqlite:/tmp/x.db`,
    );
  });

  it("names an unknown kind of store", () => {
    expect(() => parseStoreLocation("mysql://db")).toThrow(`"mysql://db" is not a store; try "sqlite:", "sqlite:/path/buckets.db" or "redis://host:6379"`);
  });

  it("reads every registered backend's examples as that backend's, whatever the case of the scheme", () => {
    for (const backend of STORE_BACKENDS) {
      for (const example of backend.examples) {
        expect(parseStoreLocation(example, { HOME: "/home/u" }).type).toBe(backend.type);
        expect(parseStoreLocation(example.replace(/^[a-z]+:/, (scheme) => scheme.toUpperCase()), { HOME: "/home/u" }).type).toBe(backend.type);
      }
    }
    expect(parseStoreLocation(" memory: ")).toEqual({ type: "memory", url: "memory:" });
    expect(() => parseStoreLocation("memory:x")).toThrow(`"memory:x" is not a store; try "sqlite:", "sqlite:/path/buckets.db" or "redis://host:6379"`);
    expect(() => parseStoreLocation("redis://")).toThrow(`"redis://" is not a store; try`);
  });

  // A Redis address with a space in it was quoted whole, password and all.
  it("never shows a Redis password, even in an address that names no store", () => {
    expect(() => parseStoreLocation(" redis://app:s3cret@db host ")).toThrow(`"redis://app:***@db host" is not a store; try "sqlite:", "sqlite:/path/buckets.db" or "redis://host:6379"`);
  });
});
