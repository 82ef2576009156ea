/** A client connection as the descriptor limit sees it: when it last did something, and whether it is doing something now. */
export interface HeldConnection {
  lastActiveMs: number;
  busy(): boolean;
}

/**
 * The connection idle the longest among those not busy, or undefined when
 * every one is busy: the one a proxy at its descriptor limit closes to make
 * room for a new one, as a server closes idle keep-alive connections, so
 * that idle clients cannot lock new ones out.
 */
export function idlest<C extends HeldConnection>(connections: Iterable<C>): C | undefined {
  let oldest: C | undefined;
  for (const connection of connections) {
    if (connection.busy() || (oldest && oldest.lastActiveMs <= connection.lastActiveMs)) continue;
    oldest = connection;
  }
  return oldest;
}
