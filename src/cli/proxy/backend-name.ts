import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { formatHostPort, type HostPort } from "../../proxy/host-port.js";
import { UsageError } from "../errors.js";
import { writeStandardError } from "../standard-streams.js";

/**
 * Looks the backend's host name up once at the start. A name the resolver
 * says does not exist is a mistake in the command (exit 2), not something to
 * find out at each client's connection; a resolver that cannot answer now
 * (EAI_AGAIN) may answer later, so the proxy starts and each connection
 * looks the name up again.
 */
export async function checkBackendName(to: HostPort): Promise<void> {
  if (isIP(to.host) !== 0) return;
  try {
    await lookup(to.host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (code === "ENOTFOUND" || code === "ENODATA") {
      throw new UsageError(`--to ${formatHostPort(to)}: the host name "${to.host}" is not known (${code}); check its spelling, or give an address, as in --to 127.0.0.1:${to.port}`);
    }
    writeStandardError(`tbucket: warning: --to ${formatHostPort(to)}: cannot look "${to.host}" up now (${code || (error as Error).message}); starting anyway, each connection looks it up again\n`);
  }
}
