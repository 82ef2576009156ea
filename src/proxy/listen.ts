import type { Server as NetServer } from "node:net";
import type { HostPort } from "./host-port.js";

/** Why a server could not start: its address is taken (EADDRINUSE), not allowed (EACCES), or not on this machine. */
export class ListenError extends Error {
  constructor(
    readonly address: HostPort,
    /** The system's error code, such as EADDRINUSE. */
    readonly errno: string,
    message: string,
  ) {
    super(message);
    this.name = "ListenError";
  }
}

/** Listens on `address` and resolves to where it listens (the chosen port for port 0); rejects with a ListenError. */
export function listenOn(server: NetServer, address: HostPort): Promise<HostPort> {
  return new Promise<HostPort>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => reject(new ListenError(address, error.code ?? "", error.message));
    server.once("error", onError);
    server.listen(address.port, address.host, () => {
      server.off("error", onError);
      const bound = server.address();
      resolve(typeof bound === "object" && bound ? { host: address.host, port: bound.port } : address);
    });
  });
}
