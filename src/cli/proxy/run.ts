import { defaultBurst } from "../../core/default-burst.js";
import type { LimitSpec } from "../../core/limit-spec.js";
import type { RequestLimit } from "../../http/request-limiter.js";
import { describeRate, describeSize, humanDuration } from "../../core/format.js";
import { untrustedProxyLine } from "../../http/trusted-proxies.js";
import type { ByteBucketSpec, ByteLimit } from "../../proxy/bucket-pool.js";
import { formatHostPort, type HostPort } from "../../proxy/host-port.js";
import type { HttpProxyObserver, RunningHttpProxy } from "../../proxy/http-proxy.js";
import { describeHttpScope } from "../../proxy/key-scopes.js";
import { ListenError } from "../../proxy/listen.js";
import { ProxyMetrics } from "../../proxy/metrics.js";
import { startTcpProxy, type TcpProxy } from "../../proxy/tcp-proxy.js";
import { openPrivateBucket } from "../../proxy/bucket-pool.js";
import { countingWaits, directionWaits } from "./set-waits.js";
import { EXIT } from "../errors.js";
import { writeStandardError } from "../standard-streams.js";
import { describeStoreFailure } from "../store-failure.js";
import { openAccessLog } from "./access-log-file.js";
import { checkBackendName } from "./backend-name.js";
import { connectionsWithinDescriptorLimit } from "./descriptor-limit.js";
import { listening, startMetrics } from "./listen-failure.js";
import type { HttpProxyConfig, ProxyConfig, TcpProxyConfig } from "./options.js";
import { describeHttpProgress, describeTcpProgress, type HttpTally, startProxyProgress } from "./progress-line.js";
import { formatHttpStats, formatTcpStats } from "./proxy-stats.js";
import type { StoreBuckets } from "./store-buckets.js";
import { Stopper } from "./stopper.js";

/** Runs the proxy until SIGINT, SIGTERM or SIGHUP, then drains; resolves to the exit status. */
export async function runProxy(config: ProxyConfig): Promise<number> {
  await checkBackendName(config.to);
  return config.mode === "tcp" ? runTcpProxy(config) : runHttpProxy(config);
}

const defaultBurstBytes = (bytesPerSecond: number) => defaultBurst("bytes", bytesPerSecond);

/** A direction's limits as the proxy takes them; none when that way is not limited. */
function bucketSpec(limits: readonly ByteLimit[] | undefined): ByteBucketSpec | undefined {
  return limits && { limits };
}

async function runTcpProxy(config: TcpProxyConfig): Promise<number> {
  let proxy: TcpProxy | undefined;
  const metrics = new ProxyMetrics({ liveKeys: () => proxy?.liveKeys ?? 0, openConnections: () => proxy?.stats.open ?? 0, sharedStore: config.shared.key !== undefined });
  const up = bucketSpec(config.up);
  const down = bucketSpec(config.down);
  const stopper = new Stopper();
  const waits = directionWaits(up, down);
  let buckets: StoreBuckets | undefined;
  if (config.shared.key !== undefined) {
    const { openStoreBuckets } = await import("./store-buckets.js");
    buckets = await openStoreBuckets(config.shared, { storeError: () => metrics.storeError(), storeBack: () => metrics.storeBack() }, waits);
  }
  const closeBuckets = async () => buckets?.close();
  const maxConnections = connectionsWithinDescriptorLimit();
  stopper.listen();
  try {
    proxy = await listening(() =>
      startTcpProxy({
        listen: config.listen,
        to: config.to,
        up,
        down,
        per: config.per,
        openBucket: countingWaits(buckets?.open ?? openPrivateBucket, waits),
        idleTimeoutMs: config.idleTimeoutMs,
        connections: config.connections,
        concurrency: config.concurrency,
        openSlots: buckets?.openSlots,
        maxConnections,
        observer: {
          admitted: (waitMs) => metrics.admitted(waitMs),
          refused: () => metrics.refused(),
          // The connection limits' refusals are told apart in --stats (refusedBy), not in the metrics' limit numbers, which are a set's.
          queued: () => metrics.queued(),
          cancelled: () => metrics.cancelled(),
          bytes: (direction, count) => metrics.bytes(direction, count),
          // Outages are counted as the store's watch sees them (openStoreBuckets' hooks), not per connection.
          storeError: () => {},
          backendFailed: (error) => {
            metrics.backendFailed();
            backendWarning(config.to, error);
          },
          full: (evicted) => {
            if (evicted) metrics.idleClosed();
            else metrics.refused();
            fullWarning(maxConnections);
          },
        },
      }),
    );
  } catch (error) {
    stopper.unlisten();
    await closeBuckets();
    throw error;
  }
  const running = proxy;
  const metricsServer = await startMetrics(config, metrics).catch(async (error: unknown) => {
    stopper.unlisten();
    await running.close(0);
    await closeBuckets();
    throw error;
  });
  if (config.progress !== "off") {
    const limits = [describeDirection("up", up), describeDirection("down", down), describeConcurrency(config)].filter(Boolean).join(", ");
    writeStandardError(
      `tbucket proxy: listening on ${formatHostPort(running.address)}, forwarding to ${formatHostPort(config.to)} (TCP${limits ? `, ${limits}` : ""}, per ${config.per})` +
        (metricsServer ? `; metrics on http://${formatHostPort(metricsServer.address)}/metrics` : "") +
        "\n",
    );
  }
  const showProgress = config.progress === "on" || (config.progress === "auto" && process.stderr.isTTY);
  const progress = showProgress ? startProxyProgress({ describe: describeTcpProgress(() => running.stats), name: config.name, stream: process.stderr, env: process.env }) : undefined;
  const startedMs = performance.now();
  await stopper.until(config.drainMs, async (drainMs) => {
    await running.close(drainMs);
    progress?.stop();
  });
  await metricsServer?.close();
  await closeBuckets();
  const limits = { up: waits.up?.reports(), down: waits.down?.reports() };
  if (config.stats) writeStandardError(formatTcpStats(running.stats, performance.now() - startedMs, config.stats, limits));
  return EXIT.ok;
}

/** When a backend failure was last told, and which: the same failure is told again only after a while. */
let lastBackendWarning = { atMs: -Infinity, code: "" };
const BACKEND_WARNING_EVERY_MS = 10_000;

/** Tells on standard error that the backend cannot be reached: once, then at most every 10 s unless the reason changes. */
function backendWarning(to: HostPort, error: NodeJS.ErrnoException): void {
  const code = error.code ?? error.message;
  const nowMs = performance.now();
  if (code === lastBackendWarning.code && nowMs - lastBackendWarning.atMs < BACKEND_WARNING_EVERY_MS) return;
  lastBackendWarning = { atMs: nowMs, code };
  const why =
    code === "ECONNREFUSED"
      ? "nothing listens there (ECONNREFUSED)"
      : code === "ENOTFOUND"
        ? "the host name is not known (ENOTFOUND)"
        : code === "ECONNRESET"
          ? "the backend reset the connection as it was made (ECONNRESET)"
          : code;
  writeStandardError(`tbucket: warning: --to ${formatHostPort(to)}: cannot connect: ${why}; the client's connection was reset, and the proxy goes on\n`);
}

let toldFull = false;

/** Tells once that the descriptor limit is reached, and what the proxy does about it. */
function fullWarning(maxConnections: number): void {
  if (toldFull) return;
  toldFull = true;
  writeStandardError(
    `tbucket: warning: ${maxConnections} connections open, as many as the open-file limit allows (two descriptors each); ` +
      `each new connection closes the one idle the longest (or is closed when none is idle); raise it with ulimit -n\n`,
  );
}

/** `down 1.00 MiB/s (1048576 B/s), burst 64.00 KiB (65536 B) and at most 1.00 GiB (…) in any 24h00m00s`: every limit that way, in order. */
function describeDirection(direction: "up" | "down", spec: ByteBucketSpec | undefined): string {
  if (!spec) return "";
  const each = spec.limits.map((limit) =>
    limit.kind === "window"
      ? `at most ${describeSize("bytes", limit.n)} in any ${humanDuration(limit.windowMs)}`
      : limit.rate === Infinity
        ? "unlimited"
        : `${describeRate("bytes", limit.rate)}, burst ${describeSize("bytes", limit.burst)}`,
  );
  return `${direction} ${each.join(" and ")}`;
}

/** `at most 20 connections at once (each client), waiting up to 2 s`. */
function describeConcurrency(config: TcpProxyConfig): string {
  if (!config.concurrency) return "";
  const { n, maxWaitMs } = config.concurrency;
  const scope = config.per === "client" ? " (each client)" : "";
  return `at most ${n} connection${n === 1 ? "" : "s"} at once${scope}${maxWaitMs > 0 ? `, waiting up to ${humanDuration(maxWaitMs)}` : ""}`;
}

async function runHttpProxy(config: HttpProxyConfig): Promise<number> {
  const { startHttpProxy } = await import("../../proxy/http-proxy.js");
  let proxy: RunningHttpProxy | undefined;
  const metrics = new ProxyMetrics({ liveKeys: () => proxy?.liveKeys() ?? 0, openConnections: () => proxy?.openConnections() ?? 0, sharedStore: config.shared.key !== undefined });
  const maxConnections = connectionsWithinDescriptorLimit();
  const tally: HttpTally = { admitted: 0, queued: 0, refused: 0 };
  const observer: HttpProxyObserver = {
    decision(decision, waitMs, limitedBy, totalLimitedBy) {
      tally[decision]++;
      if (decision === "refused") return metrics.refused(limitedBy, totalLimitedBy, config.total?.length);
      if (decision === "queued") metrics.queued();
      metrics.admitted(waitMs);
    },
    bytes: (count) => metrics.bytes("down", count),
    storeError: (error) => {
      metrics.storeError();
      writeStandardError(`tbucket: warning: ${describeStoreFailure(error, { offerLocal: false })}; ${WHILE_LOST[config.shared.onStoreError]} until it is back\n`);
    },
    storeBack: (lostForMs) => {
      metrics.storeBack();
      writeStandardError(`tbucket: store ${shared?.url}: back after ${humanDuration(lostForMs)}; the buckets are shared again\n`);
    },
    full: (evicted) => {
      if (evicted) metrics.idleClosed();
      else metrics.refused();
      fullWarning(maxConnections);
    },
    untrustedProxy: (address, field) => writeStandardError(`tbucket: warning: ${untrustedProxyLine(address, field, "--trust-proxy", `add --trust-proxy ${address}`)}\n`),
  };
  const accessLog = config.accessLog === undefined ? undefined : await openAccessLog(config.accessLog);
  const shared = config.shared.key === undefined ? undefined : await (await import("./store-buckets.js")).openHttpStoreBuckets(config.shared, { storeError: () => metrics.storeError() });
  const release = async () => {
    await shared?.close();
    await accessLog?.close();
  };
  const burst = config.burst ?? defaultBurst("count", config.requestsPerSecond);
  const stopper = new Stopper();
  stopper.listen();
  try {
    proxy = await listening(async () => {
      try {
        return await startHttpProxy({
          listen: config.listen,
          target: config.target,
          rate: config.requestsPerSecond,
          burst,
          limits: config.limits?.map(({ spec }) => requestLimit(spec)),
          total: config.total?.map(({ spec }) => requestLimit(spec)),
          per: config.per,
          classes: config.classes,
          routes: config.routes.map((rule) => ({
            ...rule.pattern,
            ...(rule.limits && { limits: rule.limits.map(({ spec }) => requestLimit(spec)) }),
            ...(rule.cost !== undefined && { cost: rule.cost }),
            ...(rule.className !== undefined && { className: rule.className }),
          })),
          trustProxy: config.trustProxy,
          ipv6Subnet: config.ipv6Prefix,
          policy: config.policy,
          maxWaitMs: config.maxWaitMs,
          bodyRate: config.bodyBytesPerSecond === undefined ? undefined : { bytesPerSecond: config.bodyBytesPerSecond, burstBytes: defaultBurstBytes(config.bodyBytesPerSecond) },
          maxKeys: config.maxKeys,
          maxConnections,
          shared: shared?.buckets,
          accessLog: accessLog?.stream,
          observer,
        });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (typeof code === "string" && /^E[A-Z]+$/.test(code)) throw new ListenError(config.listen, code, (error as Error).message);
        throw error;
      }
    });
  } catch (error) {
    stopper.unlisten();
    await release();
    throw error;
  }
  const running = proxy;
  const metricsServer = await startMetrics(config, metrics).catch(async (error: unknown) => {
    stopper.unlisten();
    await running.close(0);
    await release();
    throw error;
  });
  if (config.progress !== "off") {
    const per = describeHttpScope(config.per);
    const queue = config.policy === "queue" ? `, queue up to ${humanDuration(config.maxWaitMs ?? 0)}` : "";
    writeStandardError(
      `tbucket proxy: listening on ${formatHostPort(running.address)}, forwarding to ${config.target} (HTTP, ${describeHttpLimits(config, burst)}, per ${per}${describeTotal(config)}${describeRoutes(config)}${queue})` +
        (metricsServer ? `; metrics on http://${formatHostPort(metricsServer.address)}/metrics` : "") +
        "\n",
    );
  }
  const showProgress = config.progress === "on" || (config.progress === "auto" && process.stderr.isTTY && config.accessLog !== "-");
  const progress = showProgress
    ? startProxyProgress({ describe: describeHttpProgress(() => tally, () => running.liveKeys()), name: config.name, stream: process.stderr, env: process.env })
    : undefined;
  const startedMs = performance.now();
  await stopper.until(config.drainMs, async (drainMs) => {
    await running.close(drainMs);
    progress?.stop();
  });
  await metricsServer?.close();
  await release();
  if (config.stats) writeStandardError(formatHttpStats(tally, performance.now() - startedMs, config.stats));
  return EXIT.ok;
}

/** A limit of the command line as the middleware takes it. */
export function requestLimit(spec: LimitSpec): RequestLimit {
  if (spec.kind === "bucket") return { rate: spec.rate, burst: spec.burst };
  if (spec.kind === "window") return { n: spec.n, windowMs: spec.windowMs };
  return { concurrency: spec.n };
}

/** `10/s, burst 1`, or a set as its flags were written: `rate 10/s, window 15/2s, concurrency 4`. */
function describeHttpLimits(config: HttpProxyConfig, burst: number): string {
  const limits =
    config.limits !== undefined
      ? config.limits.map((limit) => limit.flag.replace(/--/g, "")).join(", ")
      : config.requestsPerSecond === Infinity && (config.total || config.routes.length > 0)
        ? "unlimited"
        : `${describeRate("count", config.requestsPerSecond)}, burst ${burst}`;
  if (!config.classes) return limits;
  const { specs, routes, header, defaultClass } = config.classes;
  const by = [...(routes.length > 0 ? ["route"] : []), ...(header ? [header] : [])];
  return `${limits}, classes ${specs.map((spec) => spec.name).join(", ")}${by.length > 0 ? ` by ${by.join(", ")}` : ""}, default ${defaultClass}`;
}

/** `, 2 routes`: how many rules per route there are (--check-config shows them). */
function describeRoutes(config: HttpProxyConfig): string {
  const n = config.routes.length;
  return n === 0 ? "" : `, ${n} route${n === 1 ? "" : "s"}`;
}

/** `, total 2000/s, burst 200`: the limits of every request together (--total), after the client's. */
function describeTotal(config: HttpProxyConfig): string {
  const total = config.total?.map(({ spec }) => (spec.kind === "bucket" ? `${describeRate("count", spec.rate)}, burst ${spec.burst}` : limitText(spec)));
  return total ? `, total ${total.join(" and ")}` : "";
}

function limitText(spec: LimitSpec): string {
  return spec.kind === "window" ? `${spec.n} in ${humanDuration(spec.windowMs)}` : "";
}

/** What HTTP requests get while the store is lost, as the lost line says it. */
const WHILE_LOST: Record<HttpProxyConfig["shared"]["onStoreError"], string> = {
  fail: "answering 503 with Retry-After",
  local: "going on with private buckets of the same settings",
  open: "letting every request through",
};
