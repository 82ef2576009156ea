import { describe, expect, it } from "vitest";
import { parseRedisUrl } from "../../src/store/redis-url.js";
import { StoreUrlError } from "../../src/store/store-url-error.js";

describe("parseRedisUrl", () => {
  it("takes the database from the path, 0 without one, and connects without it", () => {
    expect(parseRedisUrl("redis://db:6379")).toEqual({ url: "redis://db:6379", serverUrl: "redis://db:6379", database: 0 });
    expect(parseRedisUrl("redis://db:6379/")).toMatchObject({ serverUrl: "redis://db:6379", database: 0 });
    expect(parseRedisUrl("rediss://app:pw@db:6380/15")).toMatchObject({ serverUrl: "rediss://app:pw@db:6380", database: 15 });
    expect(parseRedisUrl("redis://[::1]:6379/2")).toMatchObject({ serverUrl: "redis://[::1]:6379", database: 2 });
    expect(parseRedisUrl("redis://db/2147483647").database).toBe(2147483647);
  });

  // `redis://HOST:PORT/x` crashed with ioredis's ReplyError stack trace; /-1 and /1.5 ran on another database than asked.
  it.each([
    ["redis://db:6379/x", `"redis://db:6379/x": "x" is not a database number; write a whole number from 0 after the host, as in redis://db:6379/0`],
    ["redis://db:6379/-1", `"redis://db:6379/-1": "-1" is not a database number; write a whole number from 0 after the host, as in redis://db:6379/0`],
    ["redis://db:6379/1.5", `"redis://db:6379/1.5": "1.5" is not a database number; write a whole number from 0 after the host, as in redis://db:6379/0`],
    ["redis://db:6379/1/2", `"redis://db:6379/1/2": "1/2" is not a database number; write a whole number from 0 after the host, as in redis://db:6379/0`],
    [
      "redis://db:6379/99999999999",
      `"redis://db:6379/99999999999": database 99999999999 is out of range; Redis numbers its databases from 0 (16 of them by default: 0 to 15), as in redis://db:6379/0`,
    ],
    ["redis://db:99999", `"redis://db:99999": the port "99999" is not a number from 1 to 65535; write one, as in redis://db:6379`],
    ["redis://db:abc/1", `"redis://db:abc/1": the port "abc" is not a number from 1 to 65535; write one, as in redis://db:6379`],
    ["redis://db:0", `"redis://db:0": the port "0" is not a number from 1 to 65535; write one, as in redis://db:6379`],
    ["redis://db:6379/2?db=3", `"redis://db:6379/2?db=3": options after "?" are not read; write the address alone, as in redis://:PASSWORD@host:6379/0`],
    ["redis://db:6379#top", `"redis://db:6379#top": options after "#" are not read; write the address alone, as in redis://:PASSWORD@host:6379/0`],
    // The password never shows in a message.
    ["redis://app:s3cret@db:6379/x", `"redis://app:***@db:6379/x": "x" is not a database number; write a whole number from 0 after the host, as in redis://app:***@db:6379/0`],
    ["redis://:s3cret@db:70000", `"redis://:***@db:70000": the port "70000" is not a number from 1 to 65535; write one, as in redis://:***@db:6379`],
  ])("refuses %s in one line, saying what to write", (text, message) => {
    const error = (() => {
      try {
        parseRedisUrl(text);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(StoreUrlError);
    expect((error as Error).message).toBe(message);
  });
});
