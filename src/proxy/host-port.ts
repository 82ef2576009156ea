import { isIP } from "node:net";

/** A TCP endpoint: a host name or address, and a port. */
export interface HostPort {
  host: string;
  port: number;
}

/** Thrown for text that is not `[HOST:]PORT`; the message says what is wrong, the CLI adds the flag and an example. */
export class HostPortError extends RangeError {
  readonly code = "EHOSTPORT";
  constructor(message: string) {
    super(message);
    this.name = "HostPortError";
  }
}

/**
 * Reads `HOST:PORT`, `[IPV6]:PORT`, or `PORT` alone when `defaultHost` is
 * given. The port is 0 to 65535 when `allowAnyPort` (a listener: 0 lets the
 * system choose), else 1 to 65535.
 */
export function parseHostPort(text: string, options: { defaultHost?: string; allowAnyPort?: boolean } = {}): HostPort {
  const trimmed = text.trim();
  let host: string | undefined;
  let portText: string;
  const bracketed = /^\[([^\]]+)\]:(.*)$/.exec(trimmed);
  if (bracketed) {
    host = bracketed[1]!;
    if (isIP(host) !== 6) throw new HostPortError(`"${text}": "${host}" between brackets is not an IPv6 address`);
    portText = bracketed[2]!;
  } else {
    const colon = trimmed.lastIndexOf(":");
    if (colon === -1) {
      portText = trimmed;
    } else {
      host = trimmed.slice(0, colon);
      portText = trimmed.slice(colon + 1);
      if (host.includes(":")) throw new HostPortError(`"${text}": an IPv6 address needs brackets, as in [::1]:8080`);
      if (!/^[A-Za-z0-9.-]+$/.test(host)) throw new HostPortError(`"${text}": "${host}" is not a host name or address`);
    }
  }
  if (host === undefined) {
    if (options.defaultHost === undefined) throw new HostPortError(`"${text}" has no host`);
    host = options.defaultHost;
  }
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  const lowest = options.allowAnyPort ? 0 : 1;
  if (!(port >= lowest && port <= 65535)) {
    throw new HostPortError(`"${text}": "${portText}" is not a port (${lowest} to 65535)`);
  }
  return { host, port };
}

/** `127.0.0.1:8080`, `[::1]:8080`: as a user would write it back. */
export function formatHostPort({ host, port }: HostPort): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}
