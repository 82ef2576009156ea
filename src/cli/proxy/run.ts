import { describeRate, describeSize } from "../../core/format.js";
import type { ByteBucketSpec } from "../../proxy/bucket-pool.js";
import { formatHostPort } from "../../proxy/host-port.js";
import { ListenError } from "../../proxy/listen.js";
import { type MetricsServer, ProxyMetrics, serveMetrics } from "../../proxy/metrics.js";
import { startTcpProxy, type TcpProxy } from "../../proxy/tcp-proxy.js";
import { EXIT, RuntimeError } from "../errors.js";
import { writeStandardError } from "../standard-streams.js";
import type { HttpProxyConfig, ProxyConfig, TcpProxyConfig } from "./options.js";
import { startProxyProgress } from "./progress-line.js";
import type { StoreBuckets } from "./store-buckets.js";

/** Runs the proxy until SIGINT or SIGTERM, then drains; resolves to the exit status. */
export async function runProxy(config: ProxyConfig): Promise<number> {
  return config.mode === "tcp" ? runTcpProxy(config) : runHttpProxy(config);
}

/** The default burst of a byte bucket: 100 ms of its rate, as the pipe's. */
function defaultBurstBytes(bytesPerSecond: number): number {
  if (bytesPerSecond === Infinity) return 1024 * 1024;
  return Math.max(1, Math.floor(bytesPerSecond / 10));
}

function bucketSpec(bytesPerSecond: number | undefined, burstBytes: number | undefined): ByteBucketSpec | undefined {
  if (bytesPerSecond === undefined) return undefined;
  return { bytesPerSecond, burstBytes: burstBytes ?? defaultBurstBytes(bytesPerSecond) };
}

async function runTcpProxy(config: TcpProxyConfig): Promise<number> {
  let proxy: TcpProxy | undefined;
  const metrics = new ProxyMetrics({ liveKeys: () => proxy?.liveKeys ?? 0, openConnections: () => proxy?.stats.open ?? 0 });
  const up = bucketSpec(config.upBytesPerSecond, config.burstBytes);
  const down = bucketSpec(config.downBytesPerSecond, config.burstBytes);
  const stopper = new Stopper();
  let fatal: RuntimeError | undefined;
  let buckets: StoreBuckets | undefined;
  if (config.shared.key !== undefined) {
    const { openStoreBuckets } = await import("./store-buckets.js");
    buckets = await openStoreBuckets(config.shared, {
      storeError: () => metrics.storeError(),
      fatal: (error) => {
        fatal ??= error;
        stopper.stop(0);
      },
    });
  }
  const closeBuckets = async () => buckets?.close();
  try {
    proxy = await listening(() =>
      startTcpProxy({
        listen: config.listen,
        to: config.to,
        up,
        down,
        per: config.per,
        openBucket: buckets?.open,
        idleTimeoutMs: config.idleTimeoutMs,
        connections: config.connections,
        observer: metrics,
      }),
    );
  } catch (error) {
    await closeBuckets();
    throw error;
  }
  const running = proxy;
  const metricsServer = await startMetrics(config, metrics).catch(async (error: unknown) => {
    await running.close(0);
    await closeBuckets();
    throw error;
  });
  if (config.progress !== "off") {
    const limits = [describeDirection("up", up), describeDirection("down", down)].filter(Boolean).join(", ");
    writeStandardError(
      `tbucket proxy: listening on ${formatHostPort(running.address)}, forwarding to ${formatHostPort(config.to)} (TCP${limits ? `, ${limits}` : ""}, per ${config.per})` +
        (metricsServer ? `; metrics on http://${formatHostPort(metricsServer.address)}/metrics` : "") +
        "\n",
    );
  }
  const showProgress = config.progress === "on" || (config.progress === "auto" && process.stderr.isTTY);
  const progress = showProgress ? startProxyProgress(() => running.stats, process.stderr) : undefined;
  await stopper.until(config.drainMs, async (drainMs) => {
    progress?.stop();
    await running.close(drainMs);
  });
  await metricsServer?.close();
  await closeBuckets();
  if (fatal) throw fatal;
  return EXIT.ok;
}

function describeDirection(direction: "up" | "down", spec: ByteBucketSpec | undefined): string {
  if (!spec) return "";
  if (spec.bytesPerSecond === Infinity) return `${direction} unlimited`;
  return `${direction} ${describeRate("bytes", spec.bytesPerSecond)}, burst ${describeSize("bytes", spec.burstBytes)}`;
}

async function runHttpProxy(config: HttpProxyConfig): Promise<number> {
  void config;
  throw new RuntimeError(`--to http://...: HTTP mode is not in this build yet; use --to HOST:PORT (TCP mode)`);
}

/** Starts a server; an address in use or refused is a runtime failure of one line. */
async function listening<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof ListenError) throw listenFailure("--listen", error);
    throw error;
  }
}

async function startMetrics(config: ProxyConfig, metrics: ProxyMetrics): Promise<MetricsServer | undefined> {
  if (!config.metrics) return undefined;
  try {
    return await serveMetrics(metrics, config.metrics);
  } catch (error) {
    if (error instanceof ListenError) throw listenFailure("--metrics", error);
    throw error;
  }
}

function listenFailure(flag: string, error: ListenError): RuntimeError {
  const where = formatHostPort(error.address);
  switch (error.errno) {
    case "EADDRINUSE":
      return new RuntimeError(`${flag} ${where}: the address is in use; stop what listens there, or choose another port`);
    case "EACCES":
      return new RuntimeError(`${flag} ${where}: not allowed to listen there (ports below 1024 need privileges); choose a port from 1024 up`);
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return new RuntimeError(`${flag} ${where}: the host is not an address of this machine; listen on 127.0.0.1 or one of its addresses`);
    default:
      return new RuntimeError(`${flag} ${where}: cannot listen (${error.errno || error.message}); choose another address`);
  }
}

/**
 * Stopper ends a server on the first SIGINT or SIGTERM, or when told to: it
 * runs `stop` with the drain time; a second signal stops draining and closes
 * what is left at once.
 */
class Stopper {
  #stop: ((drainMs: number) => Promise<void>) | undefined;
  #stopping: Promise<void> | undefined;
  #requested: number | undefined;
  #done: { resolve(): void; reject(error: unknown): void } | undefined;

  readonly #onSignal = () => this.stop(this.#drainMs);
  #drainMs = 0;

  /** Resolves once `stop` has run after a signal or a call to `stop`. */
  until(drainMs: number, stop: (drainMs: number) => Promise<void>): Promise<void> {
    this.#stop = stop;
    this.#drainMs = drainMs;
    for (const signal of SIGNALS) process.on(signal, this.#onSignal);
    return new Promise<void>((resolve, reject) => {
      this.#done = { resolve, reject };
      if (this.#requested !== undefined) this.stop(this.#requested);
    });
  }

  stop(drainMs: number): void {
    if (!this.#stop || !this.#done) {
      this.#requested = Math.min(this.#requested ?? drainMs, drainMs);
      return;
    }
    if (this.#stopping) {
      // Impatient: what is still open is closed now.
      void this.#stop(0);
      return;
    }
    const done = this.#done;
    this.#stopping = this.#stop(drainMs).then(() => {
      for (const signal of SIGNALS) process.off(signal, this.#onSignal);
      done.resolve();
    }, done.reject);
  }
}

const SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM"];


