import { connect, createServer, type Server, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { AcceptConnection, Client, ClientChannel, RejectConnection, TcpConnectionDetails } from "ssh2";
import { type Logger, RelayError } from "../core/index.js";
import { CONNECTION_UNUSABLE } from "./errors.js";
import type { ForwardDestination, ForwardSpec } from "./forward-spec.js";
import { serveSocks } from "./socks-server.js";

/** A running forward's moving parts, as the registry holds them. */
export interface ForwardRuntime {
  /** The port really listened on (the ephemeral one when the spec said 0). */
  readonly listenPort: number;
  /** `127.0.0.1`, or `*` with RELAY_SHELL_FORWARD_BIND_ANY. */
  readonly listenHost: string;
  /** Tunnelled connections open right now. */
  connections(): number;
  /** Stop listening and cut every connection (bounded wait; never throws). */
  close(): Promise<void>;
  /** The same, synchronously, at server exit. */
  destroy(): void;
}

export type RemoteConnectionHandler = (
  info: TcpConnectionDetails,
  accept: AcceptConnection<ClientChannel>,
  reject: RejectConnection,
) => void;

/**
 * Connections an SSH server hands back for remote forwards arrive as one
 * event per client; the registry routes them by (address, port) so several
 * forwards can share a pooled connection. Returns the unroute function.
 */
type RemoteRouter = (
  client: Client,
  address: string,
  port: number,
  handler: RemoteConnectionHandler,
) => () => void;

export interface ForwardStartRequest {
  client: Client;
  spec: ForwardSpec;
  /** false: listen on 127.0.0.1 only (ADR 0008). */
  bindAny: boolean;
  route: RemoteRouter;
  /** How long the SSH server may take to answer a remote listen request. */
  requestTimeoutMs: number;
  logger: Logger;
}

/** Open tunnels per forward; beyond it new connections are refused by the listener. */
const MAX_CONNECTIONS_PER_FORWARD = 256;
const SOCKS_HANDSHAKE_MS = 10_000;
const FLUSH_GRACE_MS = 5_000;
const UNFORWARD_WAIT_MS = 2_000;
const LOOPBACK = "127.0.0.1";

type Tracked = Set<() => void>;

/**
 * Join a TCP socket and an SSH channel both ways, half-close included, and
 * forget the pair once both are done. An error on either side cuts both.
 */
function join(socket: Socket, channel: Duplex, tracked: Tracked, head?: Buffer): void {
  socket.setNoDelay(true);
  let done = false;
  const cut = () => {
    if (done) return;
    done = true;
    tracked.delete(cut);
    socket.destroy();
    channel.destroy();
  };
  tracked.add(cut);
  socket.on("error", cut);
  channel.on("error", cut);
  socket.on("close", cut);
  channel.on("close", () => {
    // Let what the far side sent reach the local peer before the socket goes.
    socket.end();
    setTimeout(cut, FLUSH_GRACE_MS).unref();
  });
  if (head && head.length > 0) channel.write(head);
  socket.pipe(channel);
  channel.pipe(socket);
}

function tunnel(client: Client, from: Socket, dest: ForwardDestination): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    try {
      client.forwardOut(
        from.remoteAddress ?? LOOPBACK,
        from.remotePort ?? 0,
        dest.host,
        dest.port,
        (err, ch) => (err ? reject(err) : resolve(ch)),
      );
    } catch (err) {
      // ssh2 throws synchronously once the connection is gone.
      reject(err);
    }
  });
}

function listenError(err: NodeJS.ErrnoException, host: string, port: number): RelayError {
  const where = `${host}:${port}`;
  if (err.code === "EADDRINUSE") {
    return new RelayError("OSError", `cannot listen on ${where}: address already in use (EADDRINUSE)`, {
      cause: err,
    });
  }
  if (err.code === "EACCES" || err.code === "EPERM") {
    return new RelayError("PermissionError", `cannot listen on ${where}: permission denied (${err.code})`, {
      cause: err,
    });
  }
  return new RelayError("OSError", `cannot listen on ${where}: ${err.message}`, { cause: err });
}

/** A listener on the relay host (L and D forwards). */
async function startListener(
  request: ForwardStartRequest,
  onConnection: (socket: Socket, tracked: Tracked) => void,
): Promise<ForwardRuntime> {
  const tracked: Tracked = new Set();
  // Every accepted socket, tunnelled or still waiting for its tunnel: closing the forward cuts them all.
  const sockets = new Set<Socket>();
  // allowHalfOpen: a client that shuts down its sending side still gets the answer.
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // Errors end the socket; join() or the handshake decides what else to cut.
    socket.on("error", () => undefined);
    onConnection(socket, tracked);
  });
  server.maxConnections = MAX_CONNECTIONS_PER_FORWARD;
  const host = request.bindAny ? "*" : LOOPBACK;
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", (err) => reject(listenError(err, host, request.spec.listenPort)));
    const options = request.bindAny
      ? { port: request.spec.listenPort, exclusive: true }
      : { port: request.spec.listenPort, host: LOOPBACK, exclusive: true };
    server.listen(options, () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : request.spec.listenPort);
    });
  });
  server.on("error", (err) => request.logger.warn({ err: String(err) }, "forward listener error"));

  const cutAll = () => {
    for (const cut of [...tracked]) cut();
    for (const socket of [...sockets]) socket.destroy();
  };
  return {
    listenPort: port,
    listenHost: host,
    connections: () => sockets.size,
    destroy: () => {
      server.close();
      cutAll();
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      cutAll();
      await closed;
    },
  };
}

function startLocal(request: ForwardStartRequest, dest: ForwardDestination): Promise<ForwardRuntime> {
  return startListener(request, (socket, tracked) => {
    // Hold the client's bytes until the tunnel exists.
    socket.pause();
    tunnel(request.client, socket, dest).then(
      (channel) => {
        if (socket.destroyed) {
          channel.destroy();
          return;
        }
        join(socket, channel, tracked);
      },
      (err: unknown) => {
        request.logger.warn(
          { forward: request.spec.text, err: (err as Error)?.message ?? String(err) },
          "forward: the SSH server did not open the tunnel",
        );
        socket.destroy();
      },
    );
  });
}

function startDynamic(request: ForwardStartRequest): Promise<ForwardRuntime> {
  return startListener(request, (socket, tracked) => {
    serveSocks(socket, {
      handshakeMs: SOCKS_HANDSHAKE_MS,
      open: (host, port) => tunnel(request.client, socket, { host, port }),
      join: (client, channel, head) => join(client, channel, tracked, head),
      onRefused: (reason) =>
        request.logger.info({ forward: request.spec.text, reason }, "socks request refused"),
    });
  });
}

/** Ask the SSH server to listen, with a bound on how long it may take to answer. */
function remoteListen(client: Client, address: string, port: number, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      reject(
        new RelayError(
          "TimeoutError",
          `the SSH server did not answer the listen request in ${timeoutMs / 1000}s`,
        ),
      );
    }, timeoutMs);
    const refused = (err: unknown) =>
      new RelayError(
        "ChannelListenError",
        `the SSH server refused to listen on ${address || "*"}:${port} (port in use, or remote forwarding not allowed)`,
        { cause: err },
      );
    try {
      client.forwardIn(address, port, (err, realPort) => {
        if (settled) {
          // Too late: the caller has already been told it failed, so give the port back.
          if (!err) client.unforwardIn(address, realPort, () => undefined);
          return;
        }
        settled = true;
        clearTimeout(timer);
        if (err) reject(refused(err));
        else resolve(realPort);
      });
    } catch (err) {
      settled = true;
      clearTimeout(timer);
      reject(
        new RelayError("ConnectionError", `the SSH connection is gone: ${(err as Error).message}`, {
          code: CONNECTION_UNUSABLE,
          cause: err,
        }),
      );
    }
  });
}

async function startRemote(request: ForwardStartRequest, dest: ForwardDestination): Promise<ForwardRuntime> {
  const { client } = request;
  const address = request.bindAny ? "" : LOOPBACK;
  const port = await remoteListen(client, address, request.spec.listenPort, request.requestTimeoutMs);
  const tracked: Tracked = new Set();
  const unroute = request.route(client, address, port, (_info, accept, reject) => {
    if (tracked.size >= MAX_CONNECTIONS_PER_FORWARD) {
      reject();
      return;
    }
    // Reach the destination first, so a refused one is refused to the remote peer too.
    const socket = connect({ host: dest.host, port: dest.port, allowHalfOpen: true });
    socket.once("connect", () => {
      const channel = accept();
      if (!channel) {
        socket.destroy();
        return;
      }
      join(socket, channel, tracked);
    });
    socket.once("error", (err) => {
      if (socket.connecting) {
        request.logger.warn(
          { forward: request.spec.text, err: err.message },
          "forward: destination unreachable",
        );
        reject();
      }
    });
  });
  let stopped = false;
  /** Stop routing, cut the tunnels and cancel the remote listener; resolves on the server's answer. */
  const stop = (onCancelled?: () => void): void => {
    if (stopped) {
      onCancelled?.();
      return;
    }
    stopped = true;
    unroute();
    for (const cut of [...tracked]) cut();
    try {
      client.unforwardIn(address, port, () => onCancelled?.());
    } catch {
      // The connection is already gone, and with it the remote listener.
      onCancelled?.();
    }
  };
  return {
    listenPort: port,
    listenHost: request.bindAny ? "*" : LOOPBACK,
    connections: () => tracked.size,
    close: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, UNFORWARD_WAIT_MS);
        stop(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    destroy: () => stop(),
  };
}

/** Open the listener a spec asks for; the SSH side of L and D is opened per connection. */
export function startForward(request: ForwardStartRequest): Promise<ForwardRuntime> {
  const { spec } = request;
  if (spec.kind === "dynamic") return startDynamic(request);
  if (!spec.dest) throw new RelayError("ValueError", `forward spec ${spec.kind} has no destination`);
  return spec.kind === "local" ? startLocal(request, spec.dest) : startRemote(request, spec.dest);
}
