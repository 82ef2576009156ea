import {
  createServer,
  type IncomingMessage,
  type InformationEvent,
  request as httpRequest,
  STATUS_CODES,
  type Server,
  ServerResponse,
  validateHeaderName,
  validateHeaderValue,
} from "node:http";
import type { Socket } from "node:net";
import { pipeline } from "node:stream";
import { type Clock, systemClock } from "../core/clock.js";
import { TokenBucket } from "../core/token-bucket.js";
import { KeyTable } from "../core/key-table.js";
import { rateLimit, type RateLimitMiddleware } from "../http/rate-limit.js";
import type { GateResult } from "../http/request-gate.js";
import { ClassFunctionError, DEFAULT_MAX_KEYS } from "../http/request-limiter.js";
import { addressKey, DEFAULT_IPV6_PREFIX, plainAddress } from "../core/address-key.js";
import { clientAddress, TrustedProxies, untrustedForwarder } from "../http/trusted-proxies.js";
import { ThrottleStream } from "../stream/throttle-stream.js";
import { accessLogLine } from "./access-log.js";
import { BackendAgent } from "./backend-agent.js";
import { backendRequestHeaders, backendRequestRawHeaders, endToEndHeaders, endToEndRawHeaders, framingProblem, rawHasBody, transferCodingProblem } from "./forward-headers.js";
import type { HttpProxyOptions, RunningHttpProxy } from "./http-proxy-options.js";
import { parseHttpTarget } from "./http-target.js";
import { requestKey } from "./key-scopes.js";
import { routeClass } from "./class-routes.js";
import { findRoute, type RouteRule } from "./route-rules.js";
import type { RequestLimit } from "../http/request-limiter.js";
import { type HeldConnection, idlest } from "./idlest.js";

const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
const DEFAULT_BACKEND_TIMEOUT_MS = 60_000;

const SWEEP_INTERVAL_MS = 1000;

/** A client connection: when it last began or ended a request, and how many it has under way. */
interface ClientConnection extends HeldConnection {
  socket: Socket;
  requests: number;
  /** Pipelined requests that wait for the one under way, their socket paused meanwhile. */
  waiting: Array<() => void>;
  /** Paused for them: resumed when the last has run (node pauses and resumes on its own too). */
  paused: boolean;
}

/** What the proxy remembers of a request between the decision and the access log. */
interface RequestRecord {
  startedAtMs: number;
  client: string;
  key: string | undefined;
  /** Empty until the limit decides: a client that leaves before that (while queued) was cancelled. */
  decision: string;
  waitMs: number;
  bytes: number;
  /** With a set of limits: those that refused the request or set its wait, for the access log. */
  limitedBy?: readonly number[];
  /** With a total: those of the total's limits that refused the request or set its wait. */
  totalLimitedBy?: readonly number[];
  /** With a concurrency limit: frees the request's slot (the middleware does when the response ends; a tunnel when it closes). */
  release?: () => void;
}

/**
 * HttpProxy is the reverse proxy behind `startHttpProxy`: a node:http server
 * whose requests pass the rate-limit middleware, then go to the backend over
 * a keep-alive agent, bodies piped both ways so that neither is held whole.
 * Failures map to statuses: the backend unreachable 502, too slow 504, a
 * request node cannot parse 400, headers too slow 408. A backend that fails
 * after its response began takes that one client connection down with it,
 * the only way to tell the client the body is cut.
 */
export class HttpProxy implements RunningHttpProxy {
  readonly #options: HttpProxyOptions;
  readonly #target: URL;
  readonly #clock: Clock;
  readonly #server: Server;
  readonly #agent: BackendAgent;
  readonly #limit: RateLimitMiddleware;
  readonly #trusted: TrustedProxies | undefined;
  readonly #records = new WeakMap<IncomingMessage, RequestRecord>();
  readonly #bodyBuckets: KeyTable<TokenBucket> | undefined;
  readonly #tunnels = new Set<Socket>();
  readonly #connections = new Map<Socket, ClientConnection>();
  readonly #maxConnections: number;
  readonly #backendTimeoutMs: number;
  /** The target's path prefix without its final slash, put before every request's path. */
  readonly #pathPrefix: string;
  /** The backend's host as node connects to it: an IPv6 address without the URL's brackets. */
  readonly #backendHost: string;
  readonly #backendPort: number;
  /** The Host a request without one gets, as node would write it. */
  readonly #hostHeader: string;
  /** False at an infinite rate with private buckets and no body rate: every request goes, so none asks the middleware. */
  readonly #limitsRequests: boolean;
  #accessLog: NodeJS.WritableStream | undefined;
  /** The epoch time of the clock's 0: the log tells the instants the limit decided by, in wall-clock terms. */
  readonly #epochOffsetMs: number;
  /** Each request's rule (an index into the options' routes, -1 for none), found once for the key, limits, cost and class. */
  readonly #ruleIndex = new WeakMap<IncomingMessage, number>();
  #active = 0;
  #toldUntrustedProxy = false;
  /** Stops the sweep of full buckets, which runs while the proxy listens. */
  readonly #sweeper = new AbortController();
  #idle: (() => void) | undefined;
  #address: { host: string; port: number } | undefined;

  constructor(options: HttpProxyOptions) {
    this.#options = options;
    this.#target = typeof options.target === "string" ? parseHttpTarget(options.target) : options.target;
    this.#clock = options.clock ?? systemClock;
    this.#epochOffsetMs = Date.now() - this.#clock.now();
    this.#backendTimeoutMs = options.backendTimeoutMs ?? DEFAULT_BACKEND_TIMEOUT_MS;
    this.#maxConnections = options.maxConnections ?? Infinity;
    this.#pathPrefix = this.#target.pathname.replace(/\/$/, "");
    this.#backendHost = this.#target.hostname.replace(/^\[(.*)\]$/, "$1");
    this.#backendPort = Number(this.#target.port) || 80;
    this.#hostHeader = this.#target.port === "" ? this.#target.hostname : `${this.#target.hostname}:${this.#target.port}`;
    this.#limitsRequests = options.rate !== Infinity || options.limits !== undefined || options.total !== undefined || options.shared !== undefined || options.bodyRate !== undefined || options.classes !== undefined || (options.routes?.length ?? 0) > 0;
    this.#trusted = options.trustProxy && options.trustProxy.length > 0 ? new TrustedProxies(options.trustProxy) : undefined;
    const per = options.per ?? { by: "ip" };
    const ipv6Subnet = options.ipv6Subnet ?? DEFAULT_IPV6_PREFIX;
    const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
    const routes = options.routes ?? [];
    const ruleOf = (req: IncomingMessage): RouteRule | undefined => {
      if (routes.length === 0) return undefined;
      let index = this.#ruleIndex.get(req);
      if (index === undefined) {
        index = findRoute(routes, req.method, req.url);
        this.#ruleIndex.set(req, index);
      }
      return index < 0 ? undefined : routes[index];
    };
    // A rule with limits of its own is a plan of the middleware's limits function, its keys apart from the default's
    // (`route<N>:<client>`, so that two rules of the same limits do not share them).
    const ownLimits = routes.some((rule) => rule.limits !== undefined);
    const defaultLimits: readonly RequestLimit[] = options.limits ?? [{ rate: options.rate, burst: options.burst }];
    const classOf = (req: IncomingMessage): string | undefined =>
      ruleOf(req)?.className ??
      routeClass(options.classes!.routes ?? [], req.method, req.url) ??
      (options.classes!.header === undefined ? undefined : classHeader(req, options.classes!.header));
    this.#limit = rateLimit({
      ...(ownLimits
        ? { limits: (req: IncomingMessage) => ruleOf(req)?.limits ?? defaultLimits }
        : options.limits
          ? { limits: options.limits }
          : { rate: options.rate, burst: options.burst }),
      ...(routes.some((rule) => rule.cost !== undefined) && { cost: (req: IncomingMessage) => ruleOf(req)?.cost ?? 1 }),
      ...(options.total && { total: options.total }),
      policy: options.policy,
      maxWaitMs: options.policy === "queue" ? options.maxWaitMs : undefined,
      maxKeys,
      key: (req) => {
        const client = requestKey(per, req.headers, () => addressKey(this.#keyedClient(req), ipv6Subnet));
        const rule = ruleOf(req);
        return rule?.limits === undefined ? client : `route${routes.indexOf(rule) + 1}:${client}`;
      },
      ...(options.classes && {
        classes: options.classes.specs,
        defaultClass: options.classes.defaultClass,
        classOf,
      }),
      store: options.shared && {
        store: options.shared.store,
        name: options.shared.name,
        onStoreError: options.shared.onStoreError,
        onError: (error) => options.observer?.storeError(error),
        onBack: (lostForMs) => options.observer?.storeBack?.(lostForMs),
      },
      onDecision: (req, result, key) => this.#decided(req, result, key),
      clock: options.clock,
    });
    if (options.bodyRate) {
      const { bytesPerSecond, burstBytes } = options.bodyRate;
      // Checked now, not on the first response.
      new TokenBucket({ rate: bytesPerSecond, burst: burstBytes });
      this.#bodyBuckets = new KeyTable<TokenBucket>({ maxKeys, isSpent: (bucket) => bucket.tokens() >= bucket.burst });
    }
    this.#accessLog = options.accessLog;
    // A log that fails (a closed pipe, a full disk) stops being written; requests go on. Its owner hears of it too.
    this.#accessLog?.on("error", () => {
      this.#accessLog = undefined;
    });
    this.#agent = new BackendAgent({ keepAlive: true, maxFreeSockets: 256, scheduling: "lifo" });
    const headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
    this.#server = createServer({
      headersTimeout: headersTimeoutMs,
      // A request's body may take as long as its client needs: only slow headers are cut.
      requestTimeout: 0,
      // Node checks the header timeout on this interval: at most a fraction of it late.
      connectionsCheckingInterval: Math.max(10, Math.min(30_000, Math.floor(headersTimeoutMs / 4))),
    });
    this.#server.on("connection", (socket: Socket) => this.#onConnection(socket));
    this.#server.on("request", (req, res) => this.#inTurn(req, () => this.#onRequest(req, res)));
    this.#server.on("checkContinue", (req, res) => this.#inTurn(req, () => this.#onRequest(req, res, true)));
    this.#server.on("upgrade", (req, socket, head) => this.#onUpgrade(req, socket as Socket, head));
    // CONNECT asks for a tunnel to anywhere: a reverse proxy does not give one (node would drop the connection without a word).
    this.#server.on("connect", (_req, socket: Socket) => {
      socket.on("error", () => socket.destroy());
      socket.end("HTTP/1.1 405 Method Not Allowed\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    });
    this.#server.on("clientError", (error, socket) => this.#onClientError(error as NodeJS.ErrnoException, socket as Socket));
  }

  get address(): { host: string; port: number } {
    if (!this.#address) throw new Error("HttpProxy: not listening");
    return this.#address;
  }

  liveKeys(): number {
    return this.#limit.liveKeys;
  }

  openConnections(): number {
    return this.#connections.size;
  }

  listen(): Promise<void> {
    const { host, port } = this.#options.listen;
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      this.#server.once("error", onError);
      this.#server.listen(port, host, () => {
        this.#server.off("error", onError);
        const address = this.#server.address();
        this.#address = { host, port: typeof address === "object" && address ? address.port : port };
        void this.#sweepWhileListening();
        resolve();
      });
    });
  }

  async close(drainMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeIdleConnections();
    if (this.#active > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        this.#idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.#sweeper.abort();
    this.#server.closeAllConnections();
    for (const socket of this.#tunnels) socket.destroy();
    this.#agent.destroy();
    this.#limit.close();
    this.#bodyBuckets?.clear();
    await closed;
  }

  /** Full buckets go while the proxy is idle too, so that live keys are the keys in use. */
  async #sweepWhileListening(): Promise<void> {
    for (;;) {
      try {
        await this.#clock.sleep(SWEEP_INTERVAL_MS, this.#sweeper.signal);
      } catch {
        return;
      }
      this.#limit.sweep();
      this.#bodyBuckets?.sweep();
    }
  }

  #clientOf(req: IncomingMessage): string {
    return clientAddress(req.socket.remoteAddress, req.headers, this.#trusted) ?? "-";
  }

  /** The client whose address keys a bucket; the first request forwarded by an untrusted proxy of one's own is told (see untrustedForwarder). */
  #keyedClient(req: IncomingMessage): string {
    const client = this.#clientOf(req);
    const field = this.#toldUntrustedProxy || this.#trusted ? undefined : untrustedForwarder(client, req.headers);
    if (field !== undefined) {
      this.#toldUntrustedProxy = true;
      this.#options.observer?.untrustedProxy?.(client, field);
    }
    return client;
  }

  #decided(req: IncomingMessage, result: GateResult, key: string): void {
    const record = this.#records.get(req);
    if (record) {
      record.key = key;
      record.decision = result.decision;
      record.waitMs = result.waitMs;
      if (result.limits) record.limitedBy = result.limitedBy;
      record.totalLimitedBy = result.total?.limitedBy;
      record.release = result.release;
    }
    if (result.decision !== "cancelled") this.#options.observer?.decision(result.decision, result.waitMs, result.limits ? result.limitedBy : undefined, result.total?.limitedBy);
  }

  /** A new client connection; past `maxConnections` the one idle the longest makes room for it, or, none idle, it is closed. */
  #onConnection(socket: Socket): void {
    if (this.#connections.size >= this.#maxConnections) {
      const oldest = idlest(this.#connections.values());
      this.#options.observer?.full?.(oldest !== undefined);
      if (!oldest) {
        socket.destroy();
        return;
      }
      this.#connections.delete(oldest.socket);
      oldest.socket.destroy();
    }
    const connection: ClientConnection = { socket, requests: 0, waiting: [], paused: false, lastActiveMs: performance.now(), busy: () => connection.requests > 0 };
    this.#connections.set(socket, connection);
    socket.once("close", () => this.#connections.delete(socket));
  }

  /**
   * Runs a request once the one before it on its connection has ended. Node hands over
   * every pipelined request it has parsed at once: forwarded together, one write of
   * tiny requests would be as many backend requests and connections at the same time.
   * Its socket is paused meanwhile, so that node parses no more of them.
   */
  #inTurn(req: IncomingMessage, run: () => void): void {
    const connection = this.#connections.get(req.socket);
    if (!connection || connection.requests === 0) {
      run();
      return;
    }
    req.socket.pause();
    connection.paused = true;
    connection.waiting.push(run);
  }

  /** A request began on its connection (until `#end`): the connection is busy, not to be closed for room. */
  #touch(req: IncomingMessage, requests: 1 | -1): void {
    const connection = this.#connections.get(req.socket);
    if (!connection) return;
    connection.requests += requests;
    connection.lastActiveMs = performance.now();
  }

  #begin(req: IncomingMessage): RequestRecord {
    // Read now: a socket that closes forgets its address. Only a log needs it.
    const client = this.#accessLog ? this.#clientOf(req) : "-";
    const record: RequestRecord = { startedAtMs: this.#epochOffsetMs + this.#clock.now(), client, key: undefined, decision: "", waitMs: 0, bytes: 0 };
    this.#records.set(req, record);
    this.#active++;
    this.#touch(req, 1);
    return record;
  }

  #end(req: IncomingMessage, status: number): void {
    const record = this.#records.get(req);
    if (!record) return;
    this.#records.delete(req);
    this.#active--;
    this.#touch(req, -1);
    const connection = this.#connections.get(req.socket);
    if (connection && connection.requests === 0) {
      const next = connection.waiting.shift();
      if (next) next();
      else if (connection.paused) {
        connection.paused = false;
        req.socket.resume();
      }
    }
    // No decision and a 503: the middleware's own answer while the store is lost.
    if (record.decision === "" && status === 503) record.decision = "failed";
    // The middleware hears of the hang-up after this: the wait it gives up ends now.
    if (record.decision === "") {
      record.decision = "cancelled";
      record.waitMs = this.#epochOffsetMs + this.#clock.now() - record.startedAtMs;
    }
    if (this.#accessLog?.writable) this.#accessLog.write(accessLogLine({ ...record, req, status }));
    if (this.#active === 0) this.#idle?.();
  }

  /**
   * One request. With `expectsContinue` (Expect: 100-continue) the client
   * holds its body until told to go on: only an admitted request is told,
   * and a refused one's connection closes after the answer, since the body
   * the client did not send cannot be told from its next request.
   */
  #onRequest(req: IncomingMessage, res: ServerResponse, expectsContinue = false): void {
    const record = this.#begin(req);
    res.once("close", () => {
      // A refusal's body is what the middleware wrote.
      if (record.decision === "refused") record.bytes = Number(res.getHeader("content-length") ?? 0) || 0;
      this.#end(req, res.writableFinished ? res.statusCode : 499);
    });
    const problem = framingProblem(req.rawHeaders, req.httpVersion);
    if (problem !== undefined) {
      // Not through the limit: the request is not one the proxy can tell the length of, nor the backend's to see.
      record.decision = "invalid";
      res.shouldKeepAlive = false;
      this.#sendError(res, 400, problem);
      return;
    }
    const path = this.#pathProblem(req.url ?? "/");
    if (path !== undefined) {
      record.decision = "invalid";
      res.shouldKeepAlive = false;
      this.#sendError(res, 400, path);
      return;
    }
    const coding = transferCodingProblem(req.rawHeaders);
    if (coding !== undefined) {
      record.decision = "invalid";
      res.shouldKeepAlive = false;
      this.#sendError(res, 501, coding);
      return;
    }
    if (!this.#limitsRequests) {
      // The same as the middleware's answer at an infinite rate (admitted, no fields to add), without the key it would not use.
      record.decision = "admitted";
      this.#options.observer?.decision("admitted", 0);
      if (expectsContinue) res.writeContinue();
      this.#forward(req, res, record);
      return;
    }
    const keepAlive = res.shouldKeepAlive;
    if (expectsContinue) res.shouldKeepAlive = false;
    this.#limit(req, res, (error) => {
      if (error !== undefined) {
        record.decision = "failed";
        if (error instanceof ClassFunctionError) {
          this.#sendError(res, 400, this.#unknownClass(req));
          return;
        }
        // A lost store is the middleware's own 503; what reaches here is a fault.
        this.#sendError(res, 500, "internal error");
        return;
      }
      if (expectsContinue) {
        res.shouldKeepAlive = keepAlive;
        res.writeContinue();
      }
      this.#forward(req, res, record);
    });
  }

  #forward(req: IncomingMessage, res: ServerResponse, record: RequestRecord): void {
    const backendReq = httpRequest({
      agent: this.#agent,
      host: this.#backendHost,
      port: this.#backendPort,
      method: req.method,
      path: this.#backendPath(req.url ?? "/"),
      // Raw lines, not an object: node then builds neither the request's headers object nor one of its own.
      headers: backendRequestRawHeaders(req.rawHeaders, req.method ?? "GET", peerOf(req), this.#hostHeader),
    });
    // The time runs from the request's last byte: a body that keeps coming, however slowly, is not cut.
    // Then a client that stops sending gets 408, a backend that stops reading or does not answer 504.
    const timer = setTimeout(() => {
      const clientStopped = !req.complete && !backendReq.writableNeedDrain;
      backendReq.destroy(clientStopped ? new ClientTimeout() : new BackendTimeout());
    }, this.#backendTimeoutMs);
    req.on("data", () => timer.refresh());
    backendReq.on("drain", () => timer.refresh());
    // The client hung up: the backend's work is not wanted any more.
    res.once("close", () => {
      clearTimeout(timer);
      if (!res.writableFinished) backendReq.destroy();
    });
    // A proxy passes 1xx on (RFC 9110 15.2), but not to HTTP/1.0, nor a 100 Continue: the proxy answered Expect itself.
    if (req.httpVersion !== "1.0") backendReq.on("information", (info) => info.statusCode !== 100 && writeInformational(res, info));
    let answer: IncomingMessage | undefined;
    backendReq.once("response", (backendRes) => {
      clearTimeout(timer);
      answer = backendRes;
      try {
        const status = backendRes.statusCode ?? 502;
        const headers = endToEndRawHeaders(backendRes.rawHeaders);
        const trailer = backendRes.headers.trailer;
        // Node refuses a Trailer field on a response it will not chunk (HEAD, 204, 304, HTTP/1.0, a length).
        const chunked = res.useChunkedEncodingByDefault && req.method !== "HEAD" && status !== 204 && status !== 304 && backendRes.headers["content-length"] === undefined;
        if (trailer !== undefined && chunked) headers.push("Trailer", trailer);
        if (res.getHeaderNames().length === 0) {
          res.writeHead(status, backendRes.statusMessage, headers);
        } else {
          // Fields the middleware set (RateLimit): writeHead would set the backend's over them one by one, each repeat over the last.
          for (let i = 0; i < headers.length; i += 2) res.removeHeader(headers[i]!);
          for (let i = 0; i < headers.length; i += 2) res.appendHeader(headers[i]!, headers[i + 1]!);
          res.writeHead(status, backendRes.statusMessage);
        }
      } catch (error) {
        // A header node will not send on (an invalid character): the backend's answer cannot be passed on.
        backendRes.destroy();
        this.#sendError(res, 502, `the backend's answer cannot be passed on (${(error as NodeJS.ErrnoException).code ?? "invalid"})`);
        return;
      }
      const body = this.#shapeBody(record.key);
      backendRes.on("data", (chunk: Buffer) => {
        record.bytes += chunk.length;
      });
      // Before the pipe's own 'end' listener ends the response: trailers go with its last chunk.
      backendRes.once("end", () => {
        if (backendRes.rawTrailers.length === 0) return;
        const trailers: Array<[string, string]> = [];
        for (let i = 0; i < backendRes.rawTrailers.length; i += 2) trailers.push([backendRes.rawTrailers[i]!, backendRes.rawTrailers[i + 1]!]);
        try {
          res.addTrailers(trailers);
        } catch {
          // A trailer node will not send on (an invalid character) is left out; the body is whole.
        }
      });
      if (body) {
        pipeline(backendRes, body, res, (error) => {
          // Cut short: only closing the connection tells the client its body is incomplete.
          if (error) res.destroy();
        });
        return;
      }
      backendRes.pipe(res);
      backendRes.once("close", () => {
        if (!backendRes.complete) res.destroy();
      });
    });
    backendReq.on("error", (error) => {
      clearTimeout(timer);
      if (res.headersSent) {
        // A backend that answered whole before reading the body (a 413) resets the connection on close, the
        // unread body still in it: its answer is complete, and goes on to the client to its end.
        if (!answer?.complete) res.destroy();
        return;
      }
      if (error instanceof ClientTimeout) {
        res.shouldKeepAlive = false;
        this.#sendError(res, 408, "the request's body stopped coming");
      } else if (error instanceof BackendTimeout) this.#sendError(res, 504, "the backend did not answer in time");
      else this.#sendError(res, 502, `the backend cannot be reached (${(error as NodeJS.ErrnoException).code ?? error.message})`);
    });
    // Without a body the request ends with its headers: piping it would make the backend request
    // chunked, its final empty chunk a second small packet that Nagle and delayed ACKs hold back.
    if (!rawHasBody(req.rawHeaders)) {
      req.resume();
      backendReq.end();
      return;
    }
    req.pipe(backendReq);
    req.once("close", () => {
      if (!req.complete) backendReq.destroy();
    });
  }

  /** A throttle on the key's body-rate bucket, or none. */
  #shapeBody(key: string | undefined): ThrottleStream | undefined {
    const buckets = this.#bodyBuckets;
    const bodyRate = this.#options.bodyRate;
    if (!buckets || !bodyRate || key === undefined) return undefined;
    let bucket = buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket({ rate: bodyRate.bytesPerSecond, burst: bodyRate.burstBytes, clock: this.#clock });
      buckets.set(key, bucket);
    }
    const throttle = new ThrottleStream({ limiter: bucket, clock: this.#clock });
    const observer = this.#options.observer;
    if (observer) throttle.on("data", (chunk: Buffer) => observer.bytes(chunk.length));
    return throttle;
  }

  #backendPath(url: string): string {
    if (url.startsWith("/")) return this.#pathPrefix + url;
    // The asterisk form (OPTIONS *) is about the server, not a path.
    if (url === "*") return this.#pathPrefix === "" ? "*" : `${this.#pathPrefix}/`;
    // The absolute form (RFC 9112 3.2.2), as a client talking to a proxy writes it: its path goes to the backend, its host does not.
    const absolute = /^https?:\/\/[^/?#]*(.*)$/i.exec(url);
    const path = absolute ? absolute[1]! : url;
    return this.#pathPrefix + (path.startsWith("/") ? path : `/${path}`);
  }

  /**
   * Why a request's path cannot go under the target's prefix, or undefined: a `.` or `..` segment,
   * percent-encoded or not (`%2e%2e`, `..%2f`), which a backend that resolves it (Apache, nginx)
   * would take out of the prefix, `/api/../admin` being `/admin`. Browsers and curl resolve dot-segments
   * before they send a path, so only a hand-made request holds one.
   */
  #pathProblem(url: string): string | undefined {
    if (this.#pathPrefix === "") return undefined;
    const query = url.search(/[?#]/);
    const path = (query === -1 ? url : url.slice(0, query)).replace(/%2e/gi, ".").replace(/%2f|%5c|\\/gi, "/");
    if (!/(?:^|\/)\.\.?(?:\/|$)/.test(path)) return undefined;
    return `a path with a . or .. segment, which could climb out of the target's ${this.#pathPrefix}`;
  }

  /** What a client is told whose class header names no class (the only way the proxy's class function fails). */
  #unknownClass(req: IncomingMessage): string {
    const { header, specs } = this.#options.classes!;
    return `${header}: "${classHeader(req, header!)?.slice(0, 64)}" names no class; the classes are ${specs.map((spec) => spec.name).join(", ")}`;
  }

  #sendError(res: ServerResponse, status: number, why: string): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = `${STATUS_CODES[status] ?? "Error"}: ${why}\n`;
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
    res.end(body);
    const record = this.#records.get(res.req);
    if (record) record.bytes = Buffer.byteLength(body);
  }

  /**
   * A WebSocket (or other) upgrade: one request through the limit, then the
   * two sockets are joined until either side closes.
   */
  #onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const record = this.#begin(req);
    // Node stops watching an upgraded socket: a reset from the client must not go unhandled.
    socket.on("error", () => socket.destroy());
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    let ended = false;
    const end = (status: number) => {
      if (ended) return;
      ended = true;
      this.#end(req, status);
    };
    socket.once("close", () => {
      end(499);
      // A tunnel holds its concurrency slot while it is open: its response, detached from the socket, never ends.
      record.release?.();
    });
    // Only an answer of the proxy's own (400, 429, 503) finishes this response: the connection ends with it.
    res.once("finish", () => {
      end(res.statusCode);
      socket.end();
    });
    const problem = framingProblem(req.rawHeaders, req.httpVersion) ?? this.#pathProblem(req.url ?? "/");
    if (problem !== undefined) {
      record.decision = "invalid";
      this.#sendError(res, 400, problem);
      return;
    }
    this.#limit(req, res, (error) => {
      if (error !== undefined) {
        this.#sendError(res, error instanceof ClassFunctionError ? 400 : 500, error instanceof ClassFunctionError ? this.#unknownClass(req) : "internal error");
        return;
      }
      res.detachSocket(socket);
      this.#tunnel(req, socket, head, end);
    });
  }

  #tunnel(req: IncomingMessage, socket: Socket, head: Buffer, end: (status: number) => void): void {
    const headers = backendRequestHeaders(req.headers, peerOf(req), ["upgrade", "connection"]);
    // h2c is never offered: its tunnel would carry HTTP/2 requests past the limit (and RFC 9113 retired its upgrade).
    // Without another protocol the request goes as a plain one, and its answer ends the connection.
    const protocols = String(headers.upgrade ?? "")
      .split(",")
      .map((protocol) => protocol.trim())
      .filter((protocol) => protocol !== "" && protocol.toLowerCase() !== "h2c");
    if (protocols.length > 0) headers.upgrade = protocols.join(", ");
    else {
      delete headers.upgrade;
      headers.connection = "close";
    }
    const backendReq = httpRequest({
      // A connection of its own, never pooled: one the backend declined the upgrade on may still wait for a body the
      // request announced and never sent, and would read the next client's request as that body.
      agent: false,
      host: this.#backendHost,
      port: this.#backendPort,
      method: req.method,
      path: this.#backendPath(req.url ?? "/"),
      headers,
    });
    const timer = setTimeout(() => backendReq.destroy(new BackendTimeout()), this.#backendTimeoutMs);
    socket.once("close", () => backendReq.destroy());
    let answered = false;
    backendReq.once("upgrade", (backendRes, backendSocket, backendHead) => {
      answered = true;
      clearTimeout(timer);
      if (protocols.length === 0) {
        // Switched to a protocol nobody was offered (h2c): not a tunnel to open.
        backendSocket.destroy();
        socket.destroy();
        end(502);
        return;
      }
      const lines = [`HTTP/1.1 ${backendRes.statusCode} ${backendRes.statusMessage}`];
      for (let i = 0; i < backendRes.rawHeaders.length; i += 2) lines.push(`${backendRes.rawHeaders[i]}: ${backendRes.rawHeaders[i + 1]}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (backendHead.length > 0) socket.write(backendHead);
      if (head.length > 0) backendSocket.write(head);
      this.#tunnels.add(socket);
      socket.once("close", () => this.#tunnels.delete(socket));
      // A tunnel is busy for as long as it is open: its connection is not one to close for room.
      this.#touch(req, 1);
      end(101);
      socket.pipe(backendSocket).pipe(socket);
      // A reset on either side resets the other.
      backendSocket.on("error", () => socket.destroy());
      backendSocket.once("close", () => socket.destroy());
      socket.once("close", () => backendSocket.destroy());
    });
    backendReq.once("response", (backendRes) => {
      // The backend declined the upgrade: its answer goes back as it is, and the connection ends.
      answered = true;
      clearTimeout(timer);
      const lines = [`HTTP/1.1 ${backendRes.statusCode} ${backendRes.statusMessage}`];
      const headers = endToEndHeaders(backendRes.headers);
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${Array.isArray(value) ? value.join(", ") : String(value)}`);
      lines.push("connection: close");
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
      backendRes.pipe(socket);
      end(backendRes.statusCode ?? 502);
    });
    backendReq.on("error", (error) => {
      clearTimeout(timer);
      if (answered) {
        socket.destroy();
        return;
      }
      const status = error instanceof BackendTimeout ? 504 : 502;
      const body = `${status === 504 ? "Gateway Timeout" : "Bad Gateway"}\n`;
      if (socket.writable) socket.end(`HTTP/1.1 ${status} ${status === 504 ? "Gateway Timeout" : "Bad Gateway"}\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      end(status);
    });
    backendReq.end();
  }

  /** A request node could not parse (400), with headers too large (431) or too slow (408): answered, and the connection closed. */
  #onClientError(error: NodeJS.ErrnoException, socket: Socket): void {
    if (!socket.writable || (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const status =
      error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? "408 Request Timeout" : error.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    // A line as for the 400s the proxy finds itself: a smuggling attempt leaves a trace whichever parser refused it.
    // Not for a timeout: a browser's preconnected socket that is never used times out too.
    if (this.#accessLog?.writable && error.code !== "ERR_HTTP_REQUEST_TIMEOUT") {
      this.#accessLog.write(
        accessLogLine({
          client: socket.remoteAddress === undefined ? "-" : plainAddress(socket.remoteAddress),
          startedAtMs: this.#epochOffsetMs + this.#clock.now(),
          requestLine: requestLineOf((error as NodeJS.ErrnoException & { rawPacket?: Buffer }).rawPacket),
          status: Number.parseInt(status, 10),
          bytes: 0,
          decision: "invalid",
          waitMs: 0,
        }),
      );
    }
  }
}

/** The request line at the start of what node's parser refused, or undefined (the packet began elsewhere in the request). */
function requestLineOf(packet: Buffer | undefined): string | undefined {
  if (!packet) return undefined;
  const line = /^([A-Z]+ [^\r\n ]+ HTTP\/\d\.\d)\r?\n/.exec(packet.subarray(0, 8192).toString("latin1"));
  return line?.[1];
}

/** The address the request came from, IPv4 as IPv4 (a dual-stack socket says ::ffff:10.0.0.1). */
function peerOf(req: IncomingMessage): string | undefined {
  const address = req.socket.remoteAddress;
  return address === undefined ? undefined : plainAddress(address);
}

/**
 * Writes a backend's 1xx answer to the client ahead of the final one, through
 * the response's own raw writer (as writeContinue does), so that it keeps its
 * place behind earlier answers on a pipelined connection. writeEarlyHints
 * would drop a 103 without a Link field.
 */
function writeInformational(res: ServerResponse, info: InformationEvent): void {
  if (res.headersSent || !/^[\t -~]*$/.test(info.statusMessage)) return;
  let head = `HTTP/1.1 ${info.statusCode} ${info.statusMessage}\r\n`;
  const fields = endToEndRawHeaders(info.rawHeaders);
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch {
      continue;
    }
    head += `${name}: ${value}\r\n`;
  }
  (res as ServerResponse & { _writeRaw(data: string, encoding: string): boolean })._writeRaw(`${head}\r\n`, "latin1");
}

/** The request's body stopped coming for the backend timeout. */
class ClientTimeout extends Error {
  constructor() {
    super("client timeout");
    this.name = "ClientTimeout";
  }
}

/** The backend took longer than the backend timeout to start its answer. */
class BackendTimeout extends Error {
  constructor() {
    super("backend timeout");
    this.name = "BackendTimeout";
  }
}

/** A request's class as its header says: the value, trimmed; undefined when it has none (the default class). */
function classHeader(req: IncomingMessage, header: string): string | undefined {
  const value = req.headers[header.toLowerCase()];
  const text = (Array.isArray(value) ? value.join(", ") : value)?.trim();
  return text === "" ? undefined : text;
}
