import { once } from "node:events";
import { type IncomingMessage, request } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { BackendAgent } from "../../src/proxy/backend-agent.js";

// The backend's connection as the HTTP proxy holds it: a backend that answers before reading the body, then resets.

const servers: Server[] = [];
const agents: BackendAgent[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) agent.destroy();
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

/** A backend that answers `answer` as soon as the request's headers come, then resets; `answered` runs after. */
async function answerAndReset(answer: string, answered: () => void): Promise<number> {
  const server = createServer((socket: Socket) => {
    socket.on("error", () => {});
    let head = "";
    socket.on("data", (chunk: Buffer) => {
      if (head.includes("\r\n\r\n")) return;
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.write(answer);
      socket.resetAndDestroy();
      answered();
    });
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return (server.address() as { port: number }).port;
}

function newAgent(): BackendAgent {
  const agent = new BackendAgent({ keepAlive: true });
  agents.push(agent);
  return agent;
}

describe("BackendAgent", () => {
  it("reads the answer of a backend that reset the connection while the body was being written", async () => {
    const chunk = Buffer.alloc(64 * 1024, 97);
    let sendBody = (): void => {};
    const port = await answerAndReset("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 10\r\nConnection: close\r\n\r\ntoo large\n", () => sendBody());
    const req = request({ host: "127.0.0.1", port, method: "POST", path: "/", agent: newAgent(), headers: { "content-length": String(10 * chunk.length) } });
    // The body is written the moment the reset has come, before the event loop has read the answer waiting in the
    // kernel: the write fails first, as it does for a proxy whose client keeps sending.
    sendBody = () => {
      for (let i = 0; i < 10; i++) req.write(chunk);
    };
    req.flushHeaders();
    req.on("error", () => {}); // the reset, after the answer
    const [res] = (await once(req, "response")) as [IncomingMessage];
    let body = "";
    for await (const part of res) body += String(part);
    expect(res.statusCode).toBe(413);
    expect(body).toBe("too large\n");
  });

  it("reports a backend that reset without an answer", async () => {
    const chunk = Buffer.alloc(64 * 1024, 97);
    let sendBody = (): void => {};
    const port = await answerAndReset("", () => sendBody());
    const req = request({ host: "127.0.0.1", port, method: "POST", path: "/", agent: newAgent(), headers: { "content-length": String(10 * chunk.length) } });
    sendBody = () => {
      for (let i = 0; i < 10; i++) req.write(chunk);
    };
    req.flushHeaders();
    req.on("response", () => expect.unreachable("no answer was sent"));
    const [error] = (await once(req, "error")) as [NodeJS.ErrnoException];
    expect(["ECONNRESET", "EPIPE"]).toContain(error.code);
  });
});
