/**
 * Checks a backend address, `http://HOST:PORT[/prefix]`: throws a TypeError
 * saying what is wrong (not a URL, not http, a query or fragment) for the CLI to word.
 */
export function parseHttpTarget(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`"${text}" is not a URL; expected http://HOST:PORT`);
  }
  if (url.protocol !== "http:") throw new TypeError(`"${text}" is not an http:// address (${url.protocol.slice(0, -1)} is not proxied); expected http://HOST:PORT`);
  if (url.hostname === "") throw new TypeError(`"${text}" names no host; expected http://HOST:PORT`);
  if (url.username !== "" || url.password !== "") throw new TypeError(`"${text}" holds a user name or password, which the proxy would not send; expected http://HOST:PORT`);
  if (url.search !== "" || url.hash !== "") throw new TypeError(`"${text}" has a query or fragment; expected http://HOST:PORT[/prefix]`);
  return url;
}
