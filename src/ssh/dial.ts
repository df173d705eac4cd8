import { connect as netConnect } from "node:net";
import type { Duplex } from "node:stream";
import type { Client, ConnectConfig } from "ssh2";
import { RelayError } from "../core/index.js";
import { type AuthConfig, planAuth } from "./auth.js";
import { translateDialError } from "./errors.js";
import { createHostKeyGuard, type HostKeyReport } from "./host-key.js";
import type { KnownHostsStore } from "./known-hosts-store.js";
import { loadSsh2 } from "./ssh2-module.js";
import { endpointText, type SshTarget } from "./target.js";

interface DialOptions {
  timeoutMs: number;
  /** 0 = no keepalive. */
  keepaliveMs: number;
  /** An established connection to the last bastion: the target is reached through its tunnel. */
  via?: Client;
  signal?: AbortSignal;
}

export interface DialDeps {
  knownHosts: KnownHostsStore;
  auth: AuthConfig;
}

interface Dialed {
  client: Client;
  hostKey: HostKeyReport;
}

export type Dialer = (target: SshTarget, options: DialOptions) => Promise<Dialed>;

/** Open a direct-tcpip channel through a bastion: the socket of the next hop. */
function tunnel(via: Client, target: SshTarget): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    try {
      via.forwardOut("127.0.0.1", 0, target.host, target.port, (err, stream) => {
        if (err) {
          reject(
            new RelayError(
              "ChannelOpenError",
              `the bastion refused to open a tunnel to ${target.host}:${target.port} (${err.message})`,
              { code: "tunnel_refused", cause: err },
            ),
          );
          return;
        }
        resolve(stream);
      });
    } catch (err) {
      // ssh2 throws synchronously when the bastion connection is already gone.
      reject(
        new RelayError("ConnectionError", `the bastion connection is closed (${(err as Error).message})`, {
          code: "bastion_closed",
          cause: err,
        }),
      );
    }
  });
}

/**
 * Dial one SSH connection: a NODELAY socket (or a tunnel through `via`), a
 * host-key guard that implements the configured mode, and the auth plan.
 * Resolves once authenticated; the key learned on first contact is pinned
 * only then.
 */
export function createDialer(deps: DialDeps): Dialer {
  return (target, options) =>
    new Promise<Dialed>((resolve, reject) => {
      const endpoint = endpointText(target);
      const timeoutSeconds = Math.max(1, Math.round(options.timeoutMs / 1000));
      let offered: string[] = [];
      let settled = false;
      let client: Client | null = null;
      let sock: Duplex | null = null;

      const finish = (err: unknown, value?: Dialed) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        if (err !== undefined) {
          client?.end();
          sock?.destroy();
          reject(
            err instanceof RelayError ? err : translateDialError(err, { endpoint, timeoutSeconds, offered }),
          );
          return;
        }
        if (value) resolve(value);
      };
      const timer = setTimeout(() => {
        finish(
          new RelayError("TimeoutError", `connecting to ${endpoint} timed out after ${timeoutSeconds}s`, {
            code: "connect_timeout",
          }),
        );
      }, options.timeoutMs);
      const onAbort = () => finish(new RelayError("CancelledError", `dial to ${endpoint} was cancelled`));
      if (options.signal?.aborted) {
        onAbort();
        return;
      }
      options.signal?.addEventListener("abort", onAbort, { once: true });

      let plan: ReturnType<typeof planAuth>;
      try {
        plan = planAuth(target, deps.auth);
      } catch (err) {
        finish(err);
        return;
      }
      offered = plan.offered;
      const guard = createHostKeyGuard(deps.knownHosts, {
        host: target.host,
        port: target.port,
        mode: target.mode,
      });

      const start = (socket: Duplex) => {
        if (settled) {
          socket.destroy();
          return;
        }
        sock = socket;
        const c = new (loadSsh2().Client)();
        client = c;
        c.on("error", (err) => finish(guard.rejection() ?? err));
        c.on("close", () =>
          finish(
            guard.rejection() ??
              new RelayError("ConnectionError", `${endpoint} closed the connection during the handshake`, {
                code: "closed",
              }),
          ),
        );
        c.on("ready", () => {
          let hostKey: HostKeyReport;
          try {
            hostKey = guard.settle();
          } catch (err) {
            finish(err);
            return;
          }
          finish(undefined, { client: c, hostKey });
        });
        const algorithms = guard.algorithms();
        const config: ConnectConfig = {
          sock: socket,
          host: target.host,
          port: target.port,
          username: target.user,
          readyTimeout: options.timeoutMs,
          keepaliveInterval: options.keepaliveMs,
          keepaliveCountMax: 3,
          hostVerifier: (key: Buffer) => guard.verify(key),
          authHandler: plan.handler,
          ...(algorithms ? { algorithms: { serverHostKey: algorithms as never } } : {}),
        };
        try {
          c.connect(config);
        } catch (err) {
          finish(err);
        }
      };

      if (options.via) {
        tunnel(options.via, target).then(start, (err: unknown) => finish(err));
      } else {
        // NODELAY from the first byte: with Nagle on, every exec waits ~40 ms for delayed ACKs.
        const socket = netConnect({ host: target.host, port: target.port, noDelay: true });
        socket.setNoDelay(true);
        socket.once("error", (err) => finish(err));
        start(socket);
      }
    });
}
