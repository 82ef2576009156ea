import { connect, createServer, type Server, type Socket } from "node:net";
import { type Clock, systemClock } from "../core/clock.js";
import { TokenBucket } from "../core/token-bucket.js";
import { type TurnDecision, TurnQueue } from "../core/turn-queue.js";
import { BucketPool, type BucketScope, type ByteBucketSpec, type ConnectionBuckets, type Direction, type LimiterFactory } from "./bucket-pool.js";
import { BytePump } from "./byte-pump.js";
import { ConnectionSlots, type SlotOpener } from "./connection-slots.js";
import type { HostPort } from "./host-port.js";
import { idlest } from "./idlest.js";
import { listenOn } from "./listen.js";

export interface ConnectionLimit {
  /** Connections accepted per second. */
  perSecond: number;
  /** Connections accepted back to back. */
  burst: number;
  /**
   * How long a connection over the limit is held before it is closed; 0 closes it at once.
   * A client that closes (or half-closes) while held gives its turn up at once.
   */
  maxWaitMs: number;
}

export interface TcpProxyOptions {
  listen: HostPort;
  to: HostPort;
  /** Each direction's bucket; an absent direction is not limited. */
  up?: ByteBucketSpec;
  down?: ByteBucketSpec;
  per: BucketScope;
  /** Opens each bucket; default: private buckets. */
  openBucket?: LimiterFactory;
  /** A connection that moves no byte either way for this long is closed; Infinity: never. */
  idleTimeoutMs?: number;
  connections?: ConnectionLimit;
  /**
   * At most `n` connections open at once per scope (`per`: the link, or each
   * client address); one over it waits for a slot, first come first served,
   * up to `maxWaitMs` (less what it waited for `connections`), then is
   * closed and counted as refused. A client that leaves while it waits
   * gives its place up at once.
   */
  concurrency?: { n: number; maxWaitMs: number };
  /** Opens each scope key's slots; default: private slots. */
  openSlots?: SlotOpener;
  /**
   * Connections held open at most (each costs two descriptors). A new one
   * past it closes the connection idle the longest, as a server closes idle
   * keep-alive connections, so idle clients cannot lock new ones out; when
   * none is idle the new one is closed. Default: no limit.
   */
  maxConnections?: number;
  observer?: TcpProxyObserver;
  /** The clock of the connection limit and the private buckets; for tests, default the system clock. */
  clock?: Clock;
}

/** What the proxy tells as it goes: for metrics and progress. */
export interface TcpProxyObserver {
  /** A connection was let through, after waiting `waitMs` for the connection limit. */
  admitted(waitMs: number): void;
  /** A connection over the connection limit (`connections`) or the slots (`concurrency`) was closed. */
  refused(limit?: "connections" | "concurrency"): void;
  /** A connection over the connection limit is being held. */
  queued(): void;
  /** A held connection's client left before its turn (those behind it moved up a turn each). */
  cancelled?(): void;
  /** Bytes written on towards their destination. */
  bytes(direction: Direction, count: number): void;
  /** A bucket's store failed (the caller's factory decides what then). */
  storeError(): void;
  /** The backend could not be reached for a connection (its client's connection was reset). */
  backendFailed(error: NodeJS.ErrnoException): void;
  /** `maxConnections` were open: the connection idle the longest was closed for a new one (or, none idle, the new one). */
  full?(evicted: boolean): void;
}

export interface TcpProxyStats {
  /** Connections open now. */
  open: number;
  accepted: number;
  /** Refused by --connections or --concurrency, or closed because `maxConnections` were open and busy. */
  refused: number;
  /** Of those, how many each limit refused. */
  refusedBy: { connections: number; concurrency: number };
  /** Idle connections closed to make room for new ones past `maxConnections`. */
  evicted: number;
  /** Connections still open when the drain time ran out: reset, so neither side takes them for finished. */
  cut: number;
  bytesUp: number;
  bytesDown: number;
}

export interface TcpProxy {
  /** Where it listens, with the port the system chose for port 0. */
  readonly address: HostPort;
  readonly stats: Readonly<TcpProxyStats>;
  /** Buckets held now. */
  readonly liveKeys: number;
  /**
   * Stops accepting, lets open connections finish for up to `drainMs`, then
   * resets those left (a RST both ways: a clean end would pass a cut transfer
   * for a whole one). Resolves when every connection is closed.
   */
  close(drainMs: number): Promise<void>;
}

/** A connection the proxy holds: how to tear it down, and when it last moved a byte. */
interface LiveConnection {
  /** Closes it (FIN): an idle connection making room, or one that ran out of time. */
  abort(): void;
  /** Resets it both ways (RST): a transfer cut short. */
  cut(): void;
  settled: Promise<void>;
  lastActiveMs: number;
  /** True while a chunk is being paid for or written either way. */
  busy(): boolean;
}

/** How long closing waits for destroyed sockets to report closed. */
const CLOSE_CAP_MS = 1000;

/** What a client may send while its connection waits for its turn; read only to see it leave, then passed on. */
const HELD_BYTES = 64 * 1024;

const NO_OBSERVER: TcpProxyObserver = { admitted() {}, refused() {}, queued() {}, bytes() {}, storeError() {}, backendFailed() {} };

/**
 * Starts a TCP proxy: each connection accepted on `listen` is joined to a new
 * connection to `to`, and the bytes each way pay into the buckets of its
 * scope. Half-closes pass through, a reset on one side resets the other, and
 * a backend that cannot be reached resets the client's connection.
 */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const observer = options.observer ?? NO_OBSERVER;
  const clock = options.clock ?? systemClock;
  const pool = new BucketPool({ scope: options.per, up: options.up, down: options.down, open: options.openBucket, clock });
  const limit = options.connections;
  const turns = limit
    ? new TurnQueue({ bucket: new TokenBucket({ rate: limit.perSecond, burst: limit.burst, clock }), maxWaitMs: limit.maxWaitMs, clock })
    : undefined;
  const slots = options.concurrency
    ? new ConnectionSlots({ scope: options.per, n: options.concurrency.n, maxWaitMs: options.concurrency.maxWaitMs, open: options.openSlots, clock })
    : undefined;
  const stats: TcpProxyStats = { open: 0, accepted: 0, refused: 0, refusedBy: { connections: 0, concurrency: 0 }, evicted: 0, cut: 0, bytesUp: 0, bytesDown: 0 };
  const live = new Set<LiveConnection>();
  const maxConnections = options.maxConnections ?? Infinity;

  /** Makes room for one more connection: closes the one idle the longest; false when every one is busy. */
  const makeRoom = (): boolean => {
    const oldest = idlest(live);
    observer.full?.(oldest !== undefined);
    if (!oldest) return false;
    stats.evicted++;
    oldest.abort();
    live.delete(oldest);
    return true;
  };
  const closing = new AbortController();

  const onBytes = (direction: Direction) => (count: number) => {
    if (direction === "up") stats.bytesUp += count;
    else stats.bytesDown += count;
    observer.bytes(direction, count);
  };

  const refuse = (limit: "connections" | "concurrency") => {
    stats.refused++;
    stats.refusedBy[limit]++;
    observer.refused(limit);
  };

  /**
   * Lets a connection through --connections, then --concurrency, within one
   * --max-wait: false when refused or gone (its client left while held).
   * Resolves to the release of its slot, when it took one.
   */
  const admit = async (client: Socket): Promise<{ ok: boolean; release?: () => void }> => {
    if (!turns && !slots) {
      observer.admitted(0);
      return { ok: true };
    }
    const startedMs = clock.now();
    const gone = new AbortController();
    const held = AbortSignal.any([closing.signal, gone.signal]);
    let watching: (() => void) | undefined;
    let queued = false;
    const hold = (wait: boolean) => {
      if (wait && !queued) {
        queued = true;
        observer.queued();
      }
      watching ??= watchWhileHeld(client, () => gone.abort());
    };
    const left = () => {
      watching?.();
      watching = undefined;
      observer.cancelled?.();
      return { ok: false };
    };
    if (turns) {
      const turn = turns.take(held);
      let decision: TurnDecision;
      if (turn instanceof Promise) {
        hold(true);
        decision = (await turn).decision;
      } else {
        decision = turn;
      }
      // A client gone while held is neither let through nor refused: it left.
      if (gone.signal.aborted || client.destroyed) return left();
      if (decision === "refused" || decision === "cancelled") {
        watching?.();
        refuse("connections");
        return { ok: false };
      }
    }
    let release: (() => void) | undefined;
    if (slots) {
      // Watched from the start: a slot wait has no instant to know it will wait.
      if (options.concurrency!.maxWaitMs > 0) hold(false);
      let slot;
      try {
        slot = await slots.acquire(client.remoteAddress ?? "", held, clock.now() - startedMs);
      } catch (error) {
        if (held.aborted || client.destroyed) return left();
        watching?.();
        throw error;
      }
      if (gone.signal.aborted || client.destroyed) {
        if (slot.ok) slot.release();
        return left();
      }
      if (!slot.ok) {
        watching?.();
        refuse("concurrency");
        return { ok: false };
      }
      release = slot.release;
      if (slot.waitMs >= 1) hold(true);
    }
    watching?.();
    observer.admitted(clock.now() - startedMs);
    return { ok: true, release };
  };

  const server: Server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    client.on("error", () => {});
    if (live.size >= maxConnections && !makeRoom()) {
      stats.refused++;
      client.destroy();
      return;
    }
    const connection: LiveConnection = {
      abort: () => void client.destroy(),
      cut: () => void client.resetAndDestroy(),
      settled: Promise.resolve(),
      lastActiveMs: performance.now(),
      busy: () => false,
    };
    live.add(connection);
    stats.open++;
    let releaseSlot: (() => void) | undefined;
    connection.settled = (async () => {
      let admitted;
      try {
        admitted = await admit(client);
      } catch {
        // The slots' store failed.
        observer.storeError();
        client.resetAndDestroy();
        return;
      }
      releaseSlot = admitted.release;
      if (!admitted.ok) {
        client.destroy();
        return;
      }
      stats.accepted++;
      let buckets: ConnectionBuckets;
      try {
        buckets = await pool.acquire(client.remoteAddress ?? "");
      } catch {
        observer.storeError();
        client.resetAndDestroy();
        return;
      }
      try {
        await joinConnection(client, options, buckets, onBytes, observer, connection);
      } finally {
        buckets.release();
      }
    })().finally(() => {
      releaseSlot?.();
      stats.open--;
      live.delete(connection);
    });
  });

  const address = await listenOn(server, options.listen);

  return {
    address,
    stats,
    get liveKeys() {
      return pool.liveKeys + (slots?.liveKeys ?? 0);
    },
    async close(drainMs) {
      closing.abort();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      const drained = Promise.all([...live].map((connection) => connection.settled));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), drainMs)));
      if ((await Promise.race([drained, late])) === "late") {
        for (const connection of live) {
          stats.cut++;
          connection.cut();
          // Told once: a second close finds it still closing.
          connection.cut = () => {};
        }
      }
      clearTimeout(timer);
      // Sockets destroyed close at once; the cap only keeps a stuck one from holding the exit.
      const closed = Promise.all([...live].map((connection) => connection.settled));
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, CLOSE_CAP_MS).unref())]);
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, CLOSE_CAP_MS).unref())]);
      await pool.close();
      await slots?.close();
    },
  };
}

/**
 * Joins an accepted client to a new connection to the backend and pumps both
 * ways until both are closed. `connection` receives how to tear it down,
 * whether it is busy, and when it last moved a byte.
 */
function joinConnection(
  client: Socket,
  options: TcpProxyOptions,
  buckets: ConnectionBuckets,
  onBytes: (direction: Direction) => (count: number) => void,
  observer: TcpProxyObserver,
  connection: LiveConnection,
): Promise<void> {
  return new Promise<void>((resolve) => {
    // Gone while it waited for its turn or its buckets: its 'close' has passed.
    if (client.destroyed) {
      resolve();
      return;
    }
    const teardown = new AbortController();
    const backend = connect({ host: options.to.host, port: options.to.port, allowHalfOpen: true });
    let closedSockets = 0;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const finish = () => {
      if (++closedSockets < 2) return;
      teardown.abort();
      if (idleTimer) clearTimeout(idleTimer);
      resolve();
    };
    client.once("close", finish);
    backend.once("close", finish);
    const destroyBoth = () => {
      teardown.abort();
      client.destroy();
      backend.destroy();
    };
    connection.abort = destroyBoth;

    // A reset (or any failure) on one side resets the other, as a direct connection would show it.
    const resetOther = (other: Socket) => () => {
      teardown.abort();
      if (!other.destroyed) other.resetAndDestroy();
    };
    const resetBoth = () => {
      teardown.abort();
      if (!client.destroyed) client.resetAndDestroy();
      if (!backend.destroyed) backend.resetAndDestroy();
    };
    connection.cut = resetBoth;
    client.on("error", resetOther(backend));
    // A backend that cannot be reached resets the client's connection too; the proxy goes on.
    let connected = false;
    backend.on("error", (error: NodeJS.ErrnoException) => {
      if (!connected) observer.backendFailed(error);
      resetOther(client)();
    });

    backend.once("connect", () => {
      connected = true;
      const up = new BytePump({ source: client, target: backend, limiter: buckets.up, onBytes: touch(onBytes("up")), signal: teardown.signal, onFailure: resetBoth });
      const down = new BytePump({ source: backend, target: client, limiter: buckets.down, onBytes: touch(onBytes("down")), signal: teardown.signal, onFailure: resetBoth });
      connection.busy = () => up.busy || down.busy;
      up.start();
      down.start();
      const idleMs = options.idleTimeoutMs ?? Infinity;
      if (idleMs !== Infinity) {
        idleTimer = setTimeout(function onIdle() {
          if (up.busy || down.busy) idleTimer = setTimeout(onIdle, idleMs);
          else destroyBoth();
        }, idleMs);
      }
    });

    function touch(count: (bytes: number) => void): (bytes: number) => void {
      return (bytes) => {
        idleTimer?.refresh();
        connection.lastActiveMs = performance.now();
        count(bytes);
      };
    }
  });
}

/**
 * While a connection waits for its turn, reads what its client sends, up to
 * HELD_BYTES, so that its end (a FIN or a reset) is seen: then `onGone` runs,
 * and its turn can go to the next in line. A half-close counts as leaving,
 * as HAProxy's abortonclose has it: over TCP it looks the same as a client
 * that closed. The returned function stops watching and puts what was read
 * back, to be forwarded first once the connection is let through.
 */
function watchWhileHeld(client: Socket, onGone: () => void): () => void {
  const held: Buffer[] = [];
  let bytes = 0;
  const onData = (chunk: Buffer) => {
    held.push(chunk);
    bytes += chunk.length;
    if (bytes >= HELD_BYTES) client.pause();
  };
  client.on("data", onData);
  client.once("end", onGone);
  client.once("close", onGone);
  client.resume();
  return () => {
    client.pause();
    client.off("data", onData);
    client.off("end", onGone);
    client.off("close", onGone);
    if (held.length > 0 && !client.destroyed) client.unshift(Buffer.concat(held));
  };
}
