import { describe, expect, it } from "vitest";
import { formatHostPort, parseHostPort } from "../../src/proxy/host-port.js";

describe("parseHostPort", () => {
  it.each([
    ["127.0.0.1:8080", { host: "127.0.0.1", port: 8080 }],
    ["localhost:1", { host: "localhost", port: 1 }],
    ["[::1]:443", { host: "::1", port: 443 }],
    ["db.internal:5432", { host: "db.internal", port: 5432 }],
  ])("reads %s", (text, want) => {
    expect(parseHostPort(text)).toEqual(want);
  });

  it("takes a port alone with a default host, and port 0 only for a listener", () => {
    expect(parseHostPort("8080", { defaultHost: "127.0.0.1" })).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(parseHostPort("0", { defaultHost: "127.0.0.1", allowAnyPort: true })).toEqual({ host: "127.0.0.1", port: 0 });
    expect(() => parseHostPort("127.0.0.1:0")).toThrow(`"127.0.0.1:0": "0" is not a port (1 to 65535)`);
  });

  it.each([
    ["8080", `"8080" has no host`],
    ["::1:80", `"::1:80": an IPv6 address needs brackets, as in [::1]:8080`],
    ["[nope]:80", `"[nope]:80": "nope" between brackets is not an IPv6 address`],
    ["host:65536", `"host:65536": "65536" is not a port (1 to 65535)`],
    ["host:", `"host:": "" is not a port (1 to 65535)`],
    ["ho st:80", `"ho st:80": "ho st" is not a host name or address`],
  ])("refuses %s", (text, message) => {
    expect(() => parseHostPort(text)).toThrow(message);
  });

  it("writes an address back as a user would", () => {
    expect(formatHostPort({ host: "::1", port: 80 })).toBe("[::1]:80");
    expect(formatHostPort({ host: "127.0.0.1", port: 80 })).toBe("127.0.0.1:80");
  });
});
