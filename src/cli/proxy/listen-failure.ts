import { formatHostPort } from "../../proxy/host-port.js";
import { ListenError } from "../../proxy/listen.js";
import { type MetricsServer, type ProxyMetrics, serveMetrics } from "../../proxy/metrics.js";
import { RuntimeError } from "../errors.js";
import type { ProxyConfig } from "./options.js";

/** Starts a server; an address in use or refused is a runtime failure of one line. */
export async function listening<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof ListenError) throw listenFailure("--listen", error);
    throw error;
  }
}

export async function startMetrics(config: ProxyConfig, metrics: ProxyMetrics): Promise<MetricsServer | undefined> {
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

