import { describe, expect, it } from "vitest";
import { StoreError, type StoreFailure } from "../../src/store/bucket-store.js";
import { describeStoreFailure } from "../../src/cli/store-failure.js";

const error = (failure: StoreFailure, message: string, key?: string) => new StoreError(failure, message, { storeUrl: "sqlite:/x.db", key });

describe("describeStoreFailure: the CLI adds the flags that help to the store's own line", () => {
  it.each<[StoreFailure, string, boolean, string]>([
    ["unreachable", "store redis://h:1: cannot reach Redis (ECONNREFUSED); check the address and that Redis runs there", true, "store redis://h:1: cannot reach Redis (ECONNREFUSED); check the address and that Redis runs there, or use --on-store-error local"],
    ["unreachable", "store redis://h:1: cannot reach Redis (ECONNREFUSED); check the address and that Redis runs there", false, "store redis://h:1: cannot reach Redis (ECONNREFUSED); check the address and that Redis runs there"],
    ["locked", "store sqlite:/x.db: the file is locked by another program (still busy after 5 s); try again", true, "store sqlite:/x.db: the file is locked by another program (still busy after 5 s); try again, or use another --store sqlite:<file>"],
    ["read-only", "store sqlite:/x.db: cannot write the file (EACCES); fix its permissions", false, "store sqlite:/x.db: cannot write the file (EACCES); fix its permissions, or use another --store sqlite:<file>"],
    ["newer-schema", "store sqlite:/x.db: written by a newer tbucket (schema 2, this one knows 1); upgrade tbucket", false, "store sqlite:/x.db: written by a newer tbucket (schema 2, this one knows 1); upgrade tbucket or use another --store sqlite:<file>"],
    ["failed", "store sqlite:/x.db: disk I/O error (SQLITE_IOERR)", false, "store sqlite:/x.db: disk I/O error (SQLITE_IOERR); use another --store sqlite:<file>"],
    ["refused", "store redis://h:1: Redis asks for a password; give it in the address", true, "store redis://h:1: Redis asks for a password; give it in the address"],
    ["lost", "store redis://h:1: lost Redis (connection closed)", true, "store redis://h:1: lost Redis (connection closed)"],
  ])("%s (offering a private bucket: %s)", (failure, message, offerLocal, line) => {
    expect(describeStoreFailure(error(failure, message), { offerLocal })).toBe(line);
  });

  it("says how to set a deleted key again", () => {
    const deleted = error("deleted", 'key "backups": deleted from sqlite:/x.db while in use', "backups");
    expect(describeStoreFailure(deleted, { offerLocal: false })).toBe('key "backups": deleted from sqlite:/x.db while in use; set it again with "tbucket key set backups --rate <rate>"');
  });
});
