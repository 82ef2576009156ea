// The HTTP proxy's options and handle, apart from the server that implements them.
import type { Clock } from "../core/clock.js";
import type { BucketStore, StoreError } from "../store/bucket-store.js";

import type { HttpKeyRule } from "./key-scopes.js";
import type { RequestLimit } from "../http/request-limiter.js";
import type { ClassSpec } from "../core/class-spec.js";
import type { ClassRoute } from "./class-routes.js";
import type { RouteRule } from "./route-rules.js";

export type { HttpKeyRule };

/** What became of a request: admitted at once, admitted after waiting its turn, or refused with 429. */
export type RequestDecision = "admitted" | "queued" | "refused";

/** Buckets kept in a shared store, so that several proxies hold each client to one limit together. */
export interface SharedHttpBuckets {
  /** An open store; the proxy does not close it. */
  store: BucketStore;
  /** The prefix of the keys: each client's bucket is `NAME:<client>`. */
  name: string;
  /** While the store is lost: `fail` answers 503 with Retry-After; `local` goes on with private buckets; `open` lets requests through. */
  onStoreError: "fail" | "local" | "open";
}

/** Told what the proxy does, for metrics; every method is called synchronously and must not throw. */
export interface HttpProxyObserver {
  /**
   * One call per request (a WebSocket upgrade counts as one); `waitMs` is the time waited for its turn (0 unless queued);
   * with a set of limits, `limitedBy` names those (from 1) that refused it or set its wait;
   * with a total, `totalLimitedBy` those of the total (from 1 within it).
   */
  decision(decision: RequestDecision, waitMs: number, limitedBy?: readonly number[], totalLimitedBy?: readonly number[]): void;
  /** Response body bytes that went through a body-rate bucket. */
  bytes(n: number): void;
  /** The shared store was lost: once per outage (it is asked again until it answers). */
  storeError(error: StoreError): void;
  /** The shared store answers again after an outage of `lostForMs`. */
  storeBack?(lostForMs: number): void;
  /** `maxConnections` were open: the connection idle the longest was closed for a new one (or, none idle, the new one). */
  full?(evicted: boolean): void;
  /**
   * Once: a request keyed by its peer's address came from a private address with
   * `field` (X-Forwarded-For or Forwarded), which is not read without `trustProxy`.
   */
  untrustedProxy?(address: string, field: string): void;
}

export interface HttpProxyOptions {
  /** Where to listen; port 0 lets the system choose (see RunningHttpProxy.address). */
  listen: { host: string; port: number };
  /** The backend, `http://HOST:PORT` (a path prefix is kept). */
  target: URL | string;
  /** Requests per second per key; Infinity for no limit. */
  rate: number;
  /** Requests a key may make at once after being idle. */
  burst: number;
  /** A set of limits per key instead of `rate` and `burst` (private buckets only), as the middleware's `limits`. */
  limits?: readonly RequestLimit[];
  /**
   * Limits for every request together, beside each key's (`--total`): a
   * request goes only when both admit it; as the middleware's `total`.
   */
  total?: readonly RequestLimit[];
  /**
   * Rules per route (`--route`), the first match wins: a rule's own limits
   * are counted apart (each rule its own keys, `route<N>:<client>`), its cost
   * is what a request takes of each rate and window, its class that of its
   * requests (with `classes`, then without limits of its own). Requests
   * matching none have `rate`/`burst`/`limits`; `total` holds them all.
   */
  routes?: readonly RouteRule[];
  /** Default `{ by: "ip" }`. */
  per?: HttpKeyRule;
  /**
   * Classes sharing each key's limits (design section 12), as the
   * middleware's: a request's class is that of the first of `routes` it
   * matches, else the value of `header`, else `defaultClass`; a header
   * value naming no class is a 400.
   */
  classes?: { specs: readonly ClassSpec[]; routes?: readonly ClassRoute[]; header?: string; defaultClass: string };
  /** CIDRs (`127.0.0.1/32`, `10.0.0.0/8`, `::1`) whose X-Forwarded-For / Forwarded are believed; default none. */
  trustProxy?: readonly string[];
  /** IPv6 clients are keyed by their network of this many bits; default 56, 128 for the whole address. */
  ipv6Subnet?: number;
  /** `drop` (default): refuse at once with 429; `queue`: wait up to `maxWaitMs`, 429 beyond. */
  policy?: "drop" | "queue";
  /** The longest a queued request waits; required with `policy: "queue"`. */
  maxWaitMs?: number;
  /** Shapes response bodies per key as well. */
  bodyRate?: { bytesPerSecond: number; burstBytes: number };
  /** The most keys held at once, least recently used evicted first; default 100,000. */
  maxKeys?: number;
  /** A client must send its request's headers within this; default 30 s (408 and close). */
  headersTimeoutMs?: number;
  /**
   * The backend must start its response within this of the request's last
   * byte (504), and a request's body may pause no longer (408); default 60 s.
   */
  backendTimeoutMs?: number;
  /**
   * Client connections held open at most. A new one past it closes the one
   * idle the longest (no request under way: keep-alive, or headers not yet
   * complete), so idle clients cannot lock new ones out; when none is idle
   * the new one is closed. Default: no limit.
   */
  maxConnections?: number;
  /** Buckets in a shared store instead of private ones. */
  shared?: SharedHttpBuckets;
  /** Each request's Combined Log Format line with the decision appended (written as responses end). */
  accessLog?: NodeJS.WritableStream;
  observer?: HttpProxyObserver;
  /** For tests; default the system clock. */
  clock?: Clock;
}

export interface RunningHttpProxy {
  /** Where it listens, the port resolved. */
  readonly address: { host: string; port: number };
  /** Keys in the table now (the live-keys gauge). */
  liveKeys(): number;
  /** Client connections open now (the open-connections gauge). */
  openConnections(): number;
  /**
   * Stops accepting, lets requests under way finish for up to `drainMs`, then
   * closes what is left; resolves when everything is closed.
   */
  close(drainMs: number): Promise<void>;
}
