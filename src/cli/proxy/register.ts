import type { Command } from "commander";
import { addReportOptions } from "../report-options.js";
import { perHelp, perPlaceholder } from "../../proxy/key-scopes.js";
import { addSharedBucketOptions } from "../shared-options.js";
import { parseProxyOptions, type ProxyFlags } from "./options.js";
import { addLimitOptions } from "../limit-options.js";
import { collectText, repeatableOption } from "../repeatable-option.js";
import { UsageError } from "../errors.js";
import type { ConfigFile } from "./config-file.js";

const EXAMPLES = `
--to HOST:PORT shapes TCP (bytes both ways); --to http://HOST:PORT limits HTTP requests.
A port alone listens on 127.0.0.1; name a wider address to listen on it.

Examples:
  tbucket proxy --listen 5433 --to 127.0.0.1:5432 --down 2mb           # a slow link to test on
  tbucket proxy --listen 9000 --to 10.0.0.7:9000 --rate 5mb --per client --connections 20/s
  tbucket proxy --listen 5433 --to 10.0.0.7:5432 --rate 10mb --window 50gb/d --concurrency 20 --max-wait 5s --key db
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 50/s --burst 10 --per ip
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 10/s --window 1000/h --concurrency 20
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 50/s --key api --store redis://10.0.0.5:6379
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --per ip --rate 5/s --total 2000/s
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 20/s --route "POST /login=5/m,burst=5" --route "/export*=cost=10"
  tbucket proxy --config tbucket.yaml --check-config                   # what each rule resolves to
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 100/s --access-log access.log --metrics 9464
  tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 100/s --burst 20 --per all \\
      --class interactive=60/s --class batch=10/s,prio=1 --class-from header:X-Priority --default-class batch`;

export function registerProxy(program: Command, onExit: (code: number) => void): void {
  const command = program
    .command("proxy")
    .description("shape TCP connections (bytes per link, connection or client) or limit HTTP requests per client, until SIGINT/SIGTERM")
    .option("--listen <[host:]port>", "where to accept connections (host: 127.0.0.1 unless given; port 0: any free port)")
    .option("--to <host:port|http://host:port>", "the backend: HOST:PORT for TCP mode, http://HOST:PORT for HTTP mode");
  addLimitOptions(command, {
    rate: "TCP: byte rate each way (1mb, 10mbit); HTTP: requests per time (50/s, 600/m); repeatable: every rate holds",
    burst: "bucket capacity: bytes in TCP mode (default 100 ms of the rate), requests in HTTP mode (default 1); the i-th --burst goes with the i-th --rate",
    window: "at most n in any interval w, sliding, repeatable: HTTP: requests per key (1000/h); TCP: bytes each way (50gb/d)",
    concurrency: "at most n at once per --per scope: HTTP requests under way; TCP connections open (--per link or client), one over it closed, or held up to --max-wait",
  });
  command
    .option("--up <rate>", "TCP: byte rate from clients to the backend, in place of the first --rate that way (with its --burst)")
    .option("--down <rate>", "TCP: byte rate from the backend to clients, in place of the first --rate that way (with its --burst)")
    .option(`--per ${perPlaceholder()}`, perHelp())
    .option("--idle-timeout <d>", "TCP: close a connection that moves no byte for d")
    .option("--connections <rate>", "TCP: accept at most this many connections per time (10/s)")
    .option("--max-wait <d>", "TCP: hold a connection over --connections or --concurrency up to d, then close it (default 0); HTTP: --policy queue's longest wait")
    .option("--trust-proxy <cidrs>", "HTTP: read X-Forwarded-For/Forwarded only from these addresses (127.0.0.1,10.0.0.0/8)")
    .option("--ipv6-prefix <bits>", "HTTP: key IPv6 clients by their network of this many bits (default 56; 128: each address)")
    .option("--policy <drop|queue>", "HTTP: drop (429 at once, the default) or queue (wait up to --max-wait)")
    .option("--body-rate <rate>", "HTTP: shape response bodies per key to this byte rate")
    .option("--max-keys <n>", "HTTP: most client buckets held; the least recently used go first (default 100000)")
    .option("--access-log <file>", "HTTP: write Combined Log Format with each decision to <file> (- for standard output)")
    .option("--drain <d>", "after SIGINT/SIGTERM, let open connections finish for up to d", "10s")
    .option("--metrics <[host:]port>", "serve Prometheus metrics at http://host:port/metrics")
    .addOption(
      repeatableOption(
        "--class <name=rate,...>",
        "HTTP: a class sharing each key's rate: NAME=GUARANTEE, then any of ceil=RATE, prio=N, weight=W, burst=N, joined by commas; repeatable",
        collectText,
      ),
    )
    .addOption(repeatableOption("--route-class <[method ]path=class>", "HTTP: requests to this path (a trailing * for a prefix) are of this class (/search*=interactive); repeatable, the first match wins", collectText))
    .option("--class-from <header:NAME>", "HTTP: read each request's class from this header (header:X-Priority)")
    .option("--default-class <name>", "HTTP: the class of a request that names none (default: the first --class)")
    .addOption(repeatableOption("--total <rate>", "HTTP: requests per time of every client together, beside each client's limits (2000/s); repeatable", collectText))
    .addOption(
      repeatableOption(
        "--route <[method ]path=limits>",
        "HTTP: a rule for this path (a trailing * for a prefix): its own limits (a rate, then burst=N, window=N/D, concurrency=N), cost=N and class=NAME, joined by commas (POST /login=5/m,burst=5); repeatable, the first match wins",
        collectText,
      ),
    )
    .option("--config <file>", "read the flags from a YAML or JSON file (keys: the flags' names, and routes); flags given here override it")
    .option("--check-config", "check the flags (and --config), print what each rule resolves to, and exit without listening")
    .addOption(repeatableOption("--total-burst <n>", "HTTP: the --total bucket's capacity (default 100 ms of it, at least 1); the i-th goes with the i-th --total", collectText));
  // -q also drops the line that says where the proxy listens.
  addReportOptions(command);
  addSharedBucketOptions(command, "admits")
    .addHelpText("after", EXAMPLES)
    .action(async (flags: ProxyFlags, self: Command) => {
      const file = flags.config === undefined ? undefined : (await import("./config-file.js")).readProxyConfig(flags.config);
      const config = file ? parseWithFile(file, flags, (name) => self.getOptionValueSource(name) === "cli") : parseProxyOptions(flags);
      if (flags.checkConfig) {
        const { describeCheckedConfig } = await import("./check-config.js");
        process.stdout.write(describeCheckedConfig(config, file?.path));
        onExit(0);
        return;
      }
      const { runProxy } = await import("./run.js");
      onExit(await runProxy(config));
    });
}

/**
 * The flags with a config file under them: each key the command line gives
 * replaces the file's (a repeated flag all of the file's values); a mistake
 * in a value from the file names the file, its line and key instead of the flag.
 */
function parseWithFile(file: ConfigFile, flags: ProxyFlags, fromCommandLine: (name: string) => boolean) {
  const merged: Record<string, unknown> = { ...flags };
  for (const [name, value] of Object.entries(file.flags)) {
    if (!fromCommandLine(name === "routeRules" ? "route" : name)) merged[name] = value;
  }
  try {
    return parseProxyOptions(merged as ProxyFlags);
  } catch (error) {
    const flag = error instanceof UsageError ? /^--[a-z0-9-]+/.exec(error.message)?.[0] : undefined;
    const place = flag === undefined ? undefined : file.places.get(flag);
    const name = flag?.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    if (!place || fromCommandLine(name!)) throw error;
    throw new UsageError(`${file.path}:${place.line}: ${place.key}${(error as Error).message.slice(flag!.length)}`);
  }
}
