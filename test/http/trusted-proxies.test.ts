import { describe, expect, it } from "vitest";
import { clientAddress, forwardedChain, isPrivateAddress, TrustedProxies, TrustProxyError, untrustedForwarder } from "../../src/http/trusted-proxies.js";

describe("TrustedProxies", () => {
  it("matches addresses and CIDRs of both families, and IPv4-mapped IPv6 as IPv4", () => {
    const trusted = new TrustedProxies(["127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"]);
    expect(trusted.has("127.0.0.1")).toBe(true);
    expect(trusted.has("::ffff:127.0.0.1")).toBe(true);
    expect(trusted.has("127.0.0.2")).toBe(false);
    expect(trusted.has("10.200.3.4")).toBe(true);
    expect(trusted.has("11.0.0.1")).toBe(false);
    expect(trusted.has("::1")).toBe(true);
    expect(trusted.has("fd12::5")).toBe(true);
    expect(trusted.has("fe80::1")).toBe(false);
    expect(trusted.has("unknown")).toBe(false);
  });

  it.each([
    ["10.0.0.0/33", "the prefix length must be 0 to 32"],
    ["::/129", "the prefix length must be 0 to 128"],
    ["10.0.0.0/x", "the prefix length must be 0 to 32"],
    ["localhost", `"localhost" is not an IP address`],
    ["300.1.1.1", `"300.1.1.1" is not an IP address`],
  ])("refuses %s, saying why", (entry, why) => {
    expect(() => new TrustedProxies([entry])).toThrow(new TrustProxyError(entry, why));
    expect(() => new TrustedProxies([entry])).toThrow(`"${entry}" is not an address or a CIDR: ${why}; expected e.g. 127.0.0.1, 10.0.0.0/8 or ::1`);
  });
});

describe("forwardedChain", () => {
  it("reads X-Forwarded-For, several fields joined", () => {
    expect(forwardedChain({ "x-forwarded-for": "1.2.3.4, 10.0.0.1" })).toEqual(["1.2.3.4", "10.0.0.1"]);
    expect(forwardedChain({ "x-forwarded-for": ["1.2.3.4", "5.6.7.8"] })).toEqual(["1.2.3.4", "5.6.7.8"]);
  });

  it("reads Forwarded's for= when X-Forwarded-For is absent, ports, quotes and brackets removed", () => {
    expect(forwardedChain({ forwarded: `for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711", For=198.51.100.17:80` })).toEqual([
      "192.0.2.60",
      "2001:db8:cafe::17",
      "198.51.100.17",
    ]);
  });
});

describe("forwardedChain with both fields", () => {
  // Regression: a trusted proxy that writes Forwarded passed the client's own X-Forwarded-For along, which was read first.
  it("believes only the nearest hops both name: either may be the client's own, passed along by a proxy that writes the other", () => {
    expect(forwardedChain({ forwarded: "for=192.0.2.60", "x-forwarded-for": "6.6.6.6" })).toEqual([]);
    expect(forwardedChain({ forwarded: "for=6.6.6.6", "x-forwarded-for": "192.0.2.60" })).toEqual([]);
    expect(forwardedChain({ forwarded: "for=192.0.2.60, for=10.0.0.2", "x-forwarded-for": "6.6.6.6, 10.0.0.2" })).toEqual(["10.0.0.2"]);
    // A proxy that writes both, behind which a client wrote one of them.
    expect(forwardedChain({ forwarded: `for="[2001:DB8::1]:4711"`, "x-forwarded-for": "6.6.6.6, 2001:db8::1" })).toEqual(["2001:db8::1"]);
  });
});

describe("clientAddress", () => {
  const trusted = new TrustedProxies(["127.0.0.1", "10.0.0.0/8"]);

  it("is the peer when the peer is not trusted, whatever the headers say", () => {
    expect(clientAddress("203.0.113.9", { "x-forwarded-for": "1.2.3.4" }, trusted)).toBe("203.0.113.9");
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "1.2.3.4" }, undefined)).toBe("127.0.0.1");
  });

  it("walks the chain back from a trusted peer to the first address that is not a trusted proxy", () => {
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 1.2.3.4, 10.1.1.1" }, trusted)).toBe("1.2.3.4");
    expect(clientAddress("::ffff:127.0.0.1", { "x-forwarded-for": "1.2.3.4" }, trusted)).toBe("1.2.3.4");
  });

  it("stops at the last trusted hop when a hop is not an address, so garbage never becomes a key", () => {
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "1.2.3.4, garbage, 10.0.0.7" }, trusted)).toBe("10.0.0.7");
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "" }, trusted)).toBe("127.0.0.1");
  });

  it("never takes a client's own field, whichever of the two its proxy writes", () => {
    // The proxy at 127.0.0.1 writes Forwarded and passes the client's X-Forwarded-For along, or the other way round.
    expect(clientAddress("127.0.0.1", { forwarded: "for=192.0.2.60", "x-forwarded-for": "6.6.6.6" }, trusted)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", { forwarded: "for=6.6.6.6", "x-forwarded-for": "192.0.2.60" }, trusted)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", { forwarded: "for=192.0.2.60" }, trusted)).toBe("192.0.2.60");
    expect(clientAddress("127.0.0.1", { forwarded: "for=192.0.2.60", "x-forwarded-for": "192.0.2.60" }, trusted)).toBe("192.0.2.60");
  });

  it("reads a hop that a proxy wrote with its port (Azure's Application Gateway does), IPv4 and bracketed IPv6", () => {
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 192.0.2.60:51234" }, trusted)).toBe("192.0.2.60");
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "[2001:db8::1]:51234" }, trusted)).toBe("2001:db8::1");
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "192.0.2.60:51234", forwarded: "for=\"192.0.2.60:443\"" }, trusted)).toBe("192.0.2.60");
  });

  it("is the farthest trusted hop when every hop is trusted", () => {
    expect(clientAddress("127.0.0.1", { "x-forwarded-for": "10.0.0.2, 10.0.0.1" }, trusted)).toBe("10.0.0.2");
  });
});

describe("isPrivateAddress", () => {
  it("is true of loopback, private, shared and link-local addresses of both families", () => {
    for (const address of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1"]) {
      expect(isPrivateAddress(address)).toBe(true);
    }
    for (const address of ["8.8.8.8", "172.32.0.1", "2001:db8::1", "unknown"]) expect(isPrivateAddress(address)).toBe(false);
  });
});

describe("untrustedForwarder", () => {
  it("names the forwarding field of a request from a private address, X-Forwarded-For first; nothing for a public address or no field", () => {
    expect(untrustedForwarder("10.0.0.1", { "x-forwarded-for": "192.0.2.1", forwarded: "for=192.0.2.1" })).toBe("X-Forwarded-For");
    expect(untrustedForwarder("::1", { forwarded: "for=192.0.2.1" })).toBe("Forwarded");
    expect(untrustedForwarder("10.0.0.1", {})).toBeUndefined();
    expect(untrustedForwarder("198.51.100.7", { "x-forwarded-for": "192.0.2.1" })).toBeUndefined();
  });
});
