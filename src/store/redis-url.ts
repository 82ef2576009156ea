import { StoreUrlError } from "./store-url-error.js";

/** Redis numbers its databases from 0; SELECT takes a signed 32-bit integer. */
const MAX_DATABASE = 2 ** 31 - 1;

/** A Redis address, checked: where to connect, and the database to use there. */
export interface RedisAddress {
  /** The address as written, for messages (the caller hides the password). */
  url: string;
  /** The address without the database: what the client connects to. */
  serverUrl: string;
  /** The database the path names (`/2`); 0 without one. */
  database: number;
}

/**
 * Parses `redis://[[user]:password@]host[:port][/database]` (or `rediss://`).
 * tbucket selects the database itself rather than leaving it to the client,
 * which runs SELECT in the background and stays on database 0 when it fails.
 * Options after `?` are refused: the client would take them as its own settings.
 */
export function parseRedisUrl(text: string): RedisAddress {
  const authority = /^(rediss?:\/\/)([^/?#]*)(.*)$/i.exec(text);
  if (!authority) throw new StoreUrlError(redactUrl(text));
  const [, scheme, hostPart, rest] = authority as unknown as [string, string, string, string];
  // Messages quote the address without its password.
  const shown = redactUrl(text);
  const shownHost = redactUrl(`${scheme}${hostPart}`).slice(scheme.length);
  const hostPort = hostPart.slice(hostPart.lastIndexOf("@") + 1);
  const port = /^(?:\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostPort)?.[1];
  const example = `${scheme}${shownHost}`;
  if (port !== undefined && port !== "" && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    throw new StoreUrlError(shown, `the port "${port}" is not a number from 1 to 65535`, `write one, as in ${scheme}${shownHost.slice(0, shownHost.length - port.length)}6379`);
  }
  const query = rest.search(/[?#]/);
  if (query !== -1) {
    throw new StoreUrlError(shown, `options after "${rest[query]}" are not read`, `write the address alone, as in ${scheme}:PASSWORD@host:6379/0`);
  }
  const path = rest.replace(/^\//, "");
  let database = 0;
  if (path !== "") {
    if (!/^\d+$/.test(path)) {
      throw new StoreUrlError(shown, `"${path}" is not a database number`, `write a whole number from 0 after the host, as in ${example}/0`);
    }
    database = Number(path);
    if (database > MAX_DATABASE) {
      throw new StoreUrlError(shown, `database ${path} is out of range`, `Redis numbers its databases from 0 (16 of them by default: 0 to 15), as in ${example}/0`);
    }
  }
  let parsed: URL;
  try {
    parsed = new URL(`${scheme}${hostPart}`);
  } catch {
    throw new StoreUrlError(shown);
  }
  if (parsed.hostname === "" && hostPort !== "") throw new StoreUrlError(shown);
  return { url: text, serverUrl: `${scheme}${hostPart}`, database };
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^(rediss?:\/\/)([^@/]*:)[^@/]*@/i, "$1$2***@");
}
