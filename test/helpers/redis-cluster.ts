import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { type RedisServer, startRedisServer } from "./redis-server.js";

/** A Redis Cluster of the test's own: three masters on loopback, no replicas, nothing saved. */
export interface RedisCluster {
  /** `redis://127.0.0.1:PORT` of the first node: any node's address reaches the cluster. */
  url: string;
  ports: number[];
  /** Stops every node and removes their folders (cluster configuration files included). */
  stop(): Promise<void>;
}

/**
 * Starts three `redis-server --cluster-enabled yes`, each in a temp folder
 * of its own, joins them with `redis-cli --cluster create` (the 16384 slots
 * shared out among them) and waits until every node says cluster_state:ok.
 */
export async function startRedisCluster(): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.stop()));
  };
  try {
    for (let i = 0; i < 3; i++) nodes.push(await startClusterNode());
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await promisify(execFile)("redis-cli", ["--cluster", "create", ...addresses, "--cluster-replicas", "0", "--cluster-yes"], { timeout: 30_000 });
    await Promise.all(nodes.map((node) => waitForClusterOk(node.port)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: nodes[0]!.url, ports: nodes.map((node) => node.port), stop };
}

/** One `redis-server --cluster-enabled yes`, in a cluster of its own with no slots until it joins one. */
export function startClusterNode(): Promise<RedisServer> {
  return startRedisServer(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"], clusterPort);
}

async function waitForClusterOk(port: number): Promise<void> {
  const client = new Redis({ port, host: "127.0.0.1" });
  try {
    const deadline = Date.now() + 20_000;
    while (!/^cluster_state:ok\r?$/m.test(await client.cluster("INFO"))) {
      if (Date.now() > deadline) throw new Error(`Redis Cluster node 127.0.0.1:${port} did not reach cluster_state:ok`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    client.disconnect();
  }
}

/** A node's cluster bus listens on its port + 10000: both must be free, so the port is below 55536. */
async function clusterPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
