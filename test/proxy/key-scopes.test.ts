import { describe, expect, it } from "vitest";
import { findTcpScope, parseHttpScopeWord, perHelp, perPlaceholder, requestKey, scopeHints, TCP_SCOPES } from "../../src/proxy/key-scopes.js";

describe("the --per table", () => {
  it("gives each HTTP rule's keys, apart from one another: an address, name=VALUE (a hash past 256 characters), all", () => {
    const client = () => "10.0.0.7";
    expect(requestKey({ by: "ip" }, { "x-api-key": "k" }, client)).toBe("10.0.0.7");
    expect(requestKey({ by: "header", name: "x-api-key" }, { "x-api-key": "k" }, client)).toBe("x-api-key=k");
    expect(requestKey({ by: "header", name: "x-api-key" }, {}, client)).toBe("10.0.0.7");
    expect(requestKey({ by: "header", name: "x-api-key" }, { "x-api-key": "v".repeat(257) }, client)).toMatch(/^x-api-key:sha256=[\w-]{43}$/);
    expect(requestKey({ by: "all" }, {}, client)).toBe("all");
  });

  it("gives each TCP connection its scope's key: the link's one, its own, or its client's", () => {
    expect([TCP_SCOPES.link, TCP_SCOPES.connection, TCP_SCOPES.client].map((scope) => scope.keyOf("10.0.0.7", 3))).toEqual(["", "#3", "10.0.0.7"]);
  });

  it("reads the words of the command line, and nothing an object holds by inheritance", () => {
    expect(parseHttpScopeWord("header:X-Api-Key")).toEqual({ by: "header", name: "x-api-key" });
    expect(parseHttpScopeWord("all")).toEqual({ by: "all" });
    for (const word of ["header", "header:", "header:a b", "ip:x", "IP", "constructor", "__proto__", "toString:x"]) expect(parseHttpScopeWord(word), word).toBeUndefined();
    expect(findTcpScope("client")).toBe("client");
    expect(findTcpScope("constructor")).toBeUndefined();
  });

  it("says the rules for help, completion and usage errors from the same rows", () => {
    expect(perPlaceholder()).toBe("<link|connection|client|ip|all>");
    expect(perHelp()).toBe("who shares a bucket. TCP: link (default), connection, client; HTTP: ip (default), header:NAME, all");
    expect(scopeHints("http")).toBe(`"--per ip" (the default), "--per header:X-Api-Key" or "--per all"`);
  });
});
