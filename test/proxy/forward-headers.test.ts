import { describe, expect, it } from "vitest";
import { backendRequestRawHeaders, endToEndRawHeaders, rawHasBody } from "../../src/proxy/forward-headers.js";

describe("raw header lines through the proxy", () => {
  it("drop the hop-by-hop fields and those Connection names, keeping the others' case, order and repeats", () => {
    const raw = ["Set-Cookie", "a=1", "Connection", "close, X-Private", "x-private", "s", "Keep-Alive", "timeout=5", "Set-Cookie", "b=2", "Transfer-Encoding", "chunked", "ETag", '"v"'];
    expect(endToEndRawHeaders(raw)).toEqual(["Set-Cookie", "a=1", "Set-Cookie", "b=2", "ETag", '"v"']);
  });

  it("give the backend one Host (its own when the client sent none) and one X-Forwarded-For, the peer appended to every earlier hop", () => {
    expect(backendRequestRawHeaders(["Host", "h", "X-Forwarded-For", "1.1.1.1", "host", "evil", "x-forwarded-for", "2.2.2.2"], "GET", "10.0.0.9", "b:80")).toEqual([
      "Host",
      "h",
      "X-Forwarded-For",
      "1.1.1.1, 2.2.2.2, 10.0.0.9",
    ]);
    expect(backendRequestRawHeaders([], "GET", "10.0.0.9", "127.0.0.1:8080")).toEqual(["Host", "127.0.0.1:8080", "X-Forwarded-For", "10.0.0.9"]);
    expect(backendRequestRawHeaders(["X-Forwarded-For", "1.1.1.1"], "GET", undefined, "b")).toEqual(["Host", "b", "X-Forwarded-For", "1.1.1.1"]);
  });

  it("say Content-Length: 0 on a bodiless request whose method node would otherwise send chunked, and nothing on a GET or a chunked one", () => {
    expect(backendRequestRawHeaders(["Host", "h"], "POST", undefined, "b")).toEqual(["Host", "h", "Content-Length", "0"]);
    expect(backendRequestRawHeaders(["Host", "h"], "GET", undefined, "b")).toEqual(["Host", "h"]);
    expect(backendRequestRawHeaders(["Host", "h", "Transfer-Encoding", "chunked"], "POST", undefined, "b")).toEqual(["Host", "h"]);
    expect(backendRequestRawHeaders(["Host", "h", "Content-Length", "5"], "PUT", undefined, "b")).toEqual(["Host", "h", "Content-Length", "5"]);
  });

  it("tell a request with a body from one without", () => {
    expect(rawHasBody(["Host", "h"])).toBe(false);
    expect(rawHasBody(["content-length", "0"])).toBe(false);
    expect(rawHasBody(["Content-Length", "12"])).toBe(true);
    expect(rawHasBody(["TRANSFER-ENCODING", "chunked"])).toBe(true);
  });
});
