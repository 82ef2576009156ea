import { createServer, type Server } from "node:http";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Direction } from "./bucket-pool.js";
import type { HostPort } from "./host-port.js";
import { listenOn } from "./listen.js";
import { totalPolicyName } from "../http/rate-limit-fields.js";

/** Where wait times fall, in seconds: from a timer's tick to a long queue. */
const WAIT_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * ProxyMetrics counts what a proxy decides, in Prometheus's terms: what was
 * admitted (connections in TCP mode, requests in HTTP mode), refused and
 * queued, how long admitted ones waited, the keys held, the bytes shaped
 * and the store's failures. Both modes feed the same names, so one dashboard
 * reads either.
 */
export class ProxyMetrics {
  readonly registry = new Registry();
  readonly #admitted: Counter;
  readonly #refused: Counter;
  readonly #refusedBy: Counter<"limit">;
  readonly #queued: Counter;
  readonly #cancelled: Counter;
  readonly #wait: Histogram;
  readonly #bytes: Counter<"direction">;
  readonly #storeErrors: Counter;
  readonly #backendErrors: Counter;
  readonly #evicted: Counter;
  #storeUp = true;

  /** `openConnections` where the proxy counts them (both modes do); `sharedStore` when its buckets are in a store. */
  constructor(read: { liveKeys: () => number; openConnections?: () => number; sharedStore?: boolean }) {
    const registers = [this.registry];
    this.#admitted = new Counter({ name: "tbucket_proxy_admitted_total", help: "Connections (TCP) or requests (HTTP) let through", registers });
    this.#refused = new Counter({ name: "tbucket_proxy_refused_total", help: "Connections closed or requests answered 429 by the limit", registers });
    this.#refusedBy = new Counter({
      name: "tbucket_proxy_refused_by_limit_total",
      help: "Requests answered 429 by each limit of a set (HTTP mode with several limits), by the limit's number from 1, or by the total's (total, total-N)",
      labelNames: ["limit"],
      registers,
    });
    this.#queued = new Counter({ name: "tbucket_proxy_queued_total", help: "Connections or requests held to wait their turn", registers });
    this.#cancelled = new Counter({ name: "tbucket_proxy_cancelled_total", help: "Connections whose client left while held for its turn (TCP mode)", registers });
    this.#wait = new Histogram({ name: "tbucket_proxy_wait_seconds", help: "How long admitted connections or requests waited for a token", buckets: WAIT_BUCKETS_SECONDS, registers });
    this.#bytes = new Counter({ name: "tbucket_proxy_bytes_total", help: "Bytes passed through the buckets, up (client to backend) and down", labelNames: ["direction"], registers });
    this.#storeErrors = new Counter({ name: "tbucket_proxy_store_errors_total", help: "Times the shared store was lost (it is asked again until it answers)", registers });
    this.#backendErrors = new Counter({ name: "tbucket_proxy_backend_errors_total", help: "Connections whose backend could not be reached (TCP mode)", registers });
    this.#evicted = new Counter({
      name: "tbucket_proxy_idle_closed_total",
      help: "Idle connections closed to make room for new ones, at the most the open-file limit allows",
      registers,
    });
    new Gauge({ name: "tbucket_proxy_live_keys", help: "Buckets held now (per client, per connection, or the link's)", registers, collect() {
      this.set(read.liveKeys());
    } });
    if (read.sharedStore) {
      const up = () => (this.#storeUp ? 1 : 0);
      new Gauge({ name: "tbucket_proxy_store_up", help: "1 while the shared store answers, 0 while it is lost", registers, collect() {
        this.set(up());
      } });
    }
    const { openConnections } = read;
    if (openConnections) {
      new Gauge({ name: "tbucket_proxy_open_connections", help: "Client connections open now", registers, collect() {
        this.set(openConnections());
      } });
    }
    // Both directions show from the start, at 0.
    this.#bytes.inc({ direction: "up" }, 0);
    this.#bytes.inc({ direction: "down" }, 0);
  }

  admitted(waitMs: number): void {
    this.#admitted.inc();
    this.#wait.observe(waitMs / 1000);
  }

  /**
   * A refusal; with a set of limits, `limitedBy` the limits (from 1) that refused it;
   * with a total, `totalLimitedBy` the total's, counted as `limit="total"` (`"total-N"` for several, as RateLimit-Policy names them).
   */
  refused(limitedBy?: readonly number[], totalLimitedBy?: readonly number[], totalCount = 1): void {
    this.#refused.inc();
    for (const limit of limitedBy ?? []) this.#refusedBy.inc({ limit: String(limit) });
    for (const limit of totalLimitedBy ?? []) this.#refusedBy.inc({ limit: totalPolicyName(limit, totalCount) });
  }

  queued(): void {
    this.#queued.inc();
  }

  /** A held connection's client left before its turn. */
  cancelled(): void {
    this.#cancelled.inc();
  }

  bytes(direction: Direction, count: number): void {
    this.#bytes.inc({ direction }, count);
  }

  /** The shared store was lost. */
  storeError(): void {
    this.#storeErrors.inc();
    this.#storeUp = false;
  }

  /** The shared store answers again. */
  storeBack(): void {
    this.#storeUp = true;
  }

  /** An idle connection was closed to make room for a new one. */
  idleClosed(): void {
    this.#evicted.inc();
  }

  backendFailed(): void {
    this.#backendErrors.inc();
  }
}

export interface MetricsServer {
  readonly address: HostPort;
  close(): Promise<void>;
}

/** Serves the metrics at `GET /metrics` on `address`; any other path is 404. */
export async function serveMetrics(metrics: ProxyMetrics, address: HostPort): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "").split("?")[0];
    if (request.method !== "GET" || path !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found: metrics are at /metrics\n");
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      (error: Error) => response.writeHead(500, { "content-type": "text/plain" }).end(`${error.message}\n`),
    );
  });
  const bound = await listenOn(server, address);
  return {
    address: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
