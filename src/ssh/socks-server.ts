import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import {
  methodReply,
  parseGreeting,
  parseRequest,
  replyForOpenFailure,
  requestReply,
  SocksReply,
} from "./socks.js";

export interface SocksServeOptions {
  /** Open the tunnel to the destination the client asked for. */
  open(host: string, port: number): Promise<Duplex>;
  /** Join the client socket and the tunnel (and track the pair); `head` is data the client sent early. */
  join(socket: Socket, tunnel: Duplex, head: Buffer): void;
  /** How long a client may take to finish the handshake. */
  handshakeMs: number;
  onRefused?(reason: string): void;
}

/** Largest handshake message (a request with a 255-byte domain name) plus slack for early data. */
const MAX_HANDSHAKE_BYTES = 262 + 4096;

/**
 * Serve one SOCKS5 client on `socket`: greeting, CONNECT request, then the
 * tunnel. Anything the relay does not offer gets the protocol's refusal
 * and the socket is closed; a client that stalls is cut after handshakeMs.
 */
export function serveSocks(socket: Socket, options: SocksServeOptions): void {
  let buffer: Buffer = Buffer.alloc(0);
  let stage: "greeting" | "request" | "connecting" | "done" = "greeting";

  const timer = setTimeout(() => refuse("handshake timed out"), options.handshakeMs);
  timer.unref();

  function refuse(reason: string, reply?: Buffer): void {
    if (stage === "done") return;
    stage = "done";
    clearTimeout(timer);
    socket.off("data", onData);
    options.onRefused?.(reason);
    if (reply && socket.writable) socket.end(reply, () => socket.destroy());
    else socket.destroy();
  }

  function onData(chunk: Buffer): void {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    if (buffer.length > MAX_HANDSHAKE_BYTES) {
      refuse("handshake too long");
      return;
    }
    step();
  }

  function step(): void {
    if (stage === "greeting") {
      const greeting = parseGreeting(buffer);
      if (greeting.kind === "more") return;
      if (greeting.kind === "bad") {
        refuse(greeting.reason);
        return;
      }
      buffer = buffer.subarray(greeting.consumed);
      if (!greeting.noAuth) {
        refuse("the client offered no method the relay accepts", methodReply(false));
        return;
      }
      socket.write(methodReply(true));
      stage = "request";
    }
    if (stage === "request") {
      const request = parseRequest(buffer);
      if (request.kind === "more") return;
      if (request.kind === "refuse") {
        refuse(request.reason, requestReply(request.reply));
        return;
      }
      const head = buffer.subarray(request.consumed);
      buffer = Buffer.alloc(0);
      stage = "connecting";
      // Bytes sent before the reply wait in the socket until the tunnel is joined.
      socket.off("data", onData);
      socket.pause();
      connect(request.host, request.port, head);
    }
  }

  function connect(host: string, port: number, head: Buffer): void {
    options.open(host, port).then(
      (tunnel) => {
        if (stage !== "connecting" || socket.destroyed) {
          tunnel.destroy();
          return;
        }
        stage = "done";
        clearTimeout(timer);
        socket.write(requestReply(SocksReply.succeeded));
        options.join(socket, tunnel, head);
        socket.resume();
      },
      (err: unknown) => {
        if (stage !== "connecting") return;
        refuse(
          `tunnel to ${host}:${port} failed: ${(err as Error)?.message ?? String(err)}`,
          requestReply(replyForOpenFailure(err)),
        );
      },
    );
  }

  socket.on("data", onData);
  socket.on("error", () => refuse("client socket error"));
  socket.on("close", () => {
    if (stage !== "done") refuse("client went away");
  });
}
