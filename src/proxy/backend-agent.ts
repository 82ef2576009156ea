import { Agent } from "node:http";
import { Socket, type NetConnectOpts } from "node:net";
import type { Duplex } from "node:stream";

/**
 * A connection to the backend whose failed write does not end it. A backend may answer (a 413) and close before it
 * has read the request's body; its kernel then resets the connection, and the proxy's next write of the body fails.
 * Node's socket destroys itself on that failure, the answer unread in the kernel's buffer, and the client would get
 * 502. Here the failure stops the writing only: the rest of the body is dropped, and the read side goes on to the
 * answer and to the connection's end, whose error comes after the answer.
 */
class BackendSocket extends Socket {
  writeFailed = false;

  override _write(chunk: unknown, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.writeFailed) return callback();
    super._write(chunk, encoding, (error) => callback(this.#tolerate(error)));
  }

  override _writev(chunks: Array<{ chunk: unknown; encoding: BufferEncoding }>, callback: (error?: Error | null) => void): void {
    if (this.writeFailed) return callback();
    super._writev!(chunks, (error) => callback(this.#tolerate(error)));
  }

  /** The peer is gone for writing (it reset or closed): stop writing, keep reading. Any other error stands. */
  #tolerate(error: Error | null | undefined): Error | null | undefined {
    const code = (error as NodeJS.ErrnoException | null | undefined)?.code;
    if (code !== "EPIPE" && code !== "ECONNRESET") return error;
    this.writeFailed = true;
    return null;
  }
}

/** Keep-alive connections to the backend on BackendSockets. A failed write means the reset has come: the read
 * side ends the connection right after the answer, so it is never pooled. */
export class BackendAgent extends Agent {
  // As net.createConnection does; the agent takes the socket returned (its callback is for sockets made later).
  override createConnection(options: NetConnectOpts): Duplex {
    const socket = new BackendSocket(options);
    if (options.timeout) socket.setTimeout(options.timeout);
    return socket.connect(options);
  }
}
