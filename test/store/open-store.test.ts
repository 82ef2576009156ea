import { describe, expect, it } from "vitest";
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
});
