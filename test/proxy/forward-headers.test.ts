import { describe, expect, it } from "vitest";
import { backendRequestRawHeaders, endToEndRawHeaders, framingProblem, rawHasBody, transferCodingProblem } from "../../src/proxy/forward-headers.js";

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

  it("append the peer to a Forwarded the client sent, as to X-Forwarded-For, so that both name the same nearest hop", () => {
    // Passed on as the client wrote it, a Forwarded would name whom the client says, for a backend that reads it first.
    expect(backendRequestRawHeaders(["Host", "h", "Forwarded", "for=6.6.6.6", "forwarded", "for=7.7.7.7;proto=http"], "GET", "10.0.0.9", "b")).toEqual([
      "Host",
      "h",
      "X-Forwarded-For",
      "10.0.0.9",
      "Forwarded",
      "for=6.6.6.6, for=7.7.7.7;proto=http, for=10.0.0.9",
    ]);
    expect(backendRequestRawHeaders(["Forwarded", "for=6.6.6.6"], "GET", "2001:db8::1", "b")).toEqual(["Host", "b", "X-Forwarded-For", "2001:db8::1", "Forwarded", 'for=6.6.6.6, for="[2001:db8::1]"']);
    expect(backendRequestRawHeaders(["Host", "h"], "GET", "10.0.0.9", "b")).toEqual(["Host", "h", "X-Forwarded-For", "10.0.0.9"]);
  });

  it("say the body's framing whatever the method: the client's Transfer-Encoding or Content-Length, or Content-Length: 0 where node would send chunked", () => {
    expect(backendRequestRawHeaders(["Host", "h"], "POST", undefined, "b")).toEqual(["Host", "h", "Content-Length", "0"]);
    expect(backendRequestRawHeaders(["Host", "h"], "GET", undefined, "b")).toEqual(["Host", "h"]);
    expect(backendRequestRawHeaders(["Host", "h", "Transfer-Encoding", "chunked"], "POST", undefined, "b")).toEqual(["Host", "h", "Transfer-Encoding", "chunked"]);
    expect(backendRequestRawHeaders(["Host", "h", "transfer-encoding", "CHUNKED"], "GET", undefined, "b")).toEqual(["Host", "h", "Transfer-Encoding", "chunked"]);
    expect(backendRequestRawHeaders(["Host", "h", "Content-Length", "5"], "PUT", undefined, "b")).toEqual(["Host", "h", "Content-Length", "5"]);
  });

  it("keep the framing and the Host though Connection names them, and pass TE: trailers on, named in Connection", () => {
    const raw = ["Host", "h", "Connection", "content-length, host, transfer-encoding, x-a", "Content-Length", "3", "X-A", "1"];
    expect(backendRequestRawHeaders(raw, "GET", undefined, "b")).toEqual(["Host", "h", "Content-Length", "3"]);
    expect(endToEndRawHeaders(["Connection", "content-length", "Content-Length", "3"])).toEqual(["Content-Length", "3"]);
    expect(backendRequestRawHeaders(["Host", "h", "TE", "gzip;q=0.5, trailers"], "GET", undefined, "b")).toEqual(["Host", "h", "TE", "trailers", "Connection", "te"]);
    expect(backendRequestRawHeaders(["Host", "h", "TE", "gzip"], "GET", undefined, "b")).toEqual(["Host", "h"]);
  });

  it("tell a request with a body from one without", () => {
    expect(rawHasBody(["Host", "h"])).toBe(false);
    expect(rawHasBody(["content-length", "0"])).toBe(false);
    expect(rawHasBody(["Content-Length", "12"])).toBe(true);
    expect(rawHasBody(["TRANSFER-ENCODING", "chunked"])).toBe(true);
  });

  it("find what a request's framing cannot be forwarded with", () => {
    expect(framingProblem(["Host", "a", "host", "a"], "1.1")).toBe("more than one Host field");
    expect(framingProblem(["Host", "a/b"], "1.1")).toBe("a Host field that is not host[:port]");
    expect(framingProblem(["Transfer-Encoding", "chunked"], "1.0")).toBe("Transfer-Encoding on an HTTP/1.0 request");
    for (const host of ["a", "a.b:80", "[::1]", "[::1]:8080", "", "xn--d1a.example"]) expect(framingProblem(["Host", host], "1.1")).toBeUndefined();
    expect(framingProblem(["Transfer-Encoding", "chunked"], "1.1")).toBeUndefined();
  });

  it("find a transfer coding other than a single chunked, in one field or spread over two", () => {
    for (const raw of [["Transfer-Encoding", "gzip, chunked"], ["Transfer-Encoding", "identity"], ["Transfer-Encoding", "identity", "transfer-encoding", "chunked"], ["Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked"]]) {
      expect(transferCodingProblem(raw)).toBe("a transfer coding other than chunked");
    }
    for (const raw of [[], ["Transfer-Encoding", "chunked"], ["TRANSFER-ENCODING", " , Chunked"]]) expect(transferCodingProblem(raw)).toBeUndefined();
  });
});
