import type { AcceptConnection, Client, ClientChannel, RejectConnection, TcpConnectionDetails } from "ssh2";
import { type Ids, type Logger, RelayError, silentLogger } from "../core/index.js";
import type { ConnectionOverrides, HostDirectory } from "./directory.js";
import { type ForwardRuntime, type RemoteConnectionHandler, startForward } from "./forward.js";
import { destinationText, type ForwardKind, type ForwardSpec } from "./forward-spec.js";
import type { HostKeyReport } from "./host-key.js";
import type { SshLease, SshPool } from "./pool.js";

export interface ForwardRegistryConfig {
  /** RELAY_SHELL_MAX_FORWARDS. */
  maxForwards: number;
  /** RELAY_SHELL_FORWARD_BIND_ANY: listen on every interface instead of 127.0.0.1. */
  bindAny: boolean;
  /** How long the SSH server may take to answer a remote listen request (default 10 s). */
  requestTimeoutMs?: number;
}

export interface ForwardRegistryDeps {
  directory: HostDirectory;
  pool: SshPool;
  ids: Ids;
  logger?: Logger;
}

interface OpenForwardRequest {
  /** The host as the caller named it. */
  host: string;
  overrides?: ConnectionOverrides;
  spec: ForwardSpec;
  /** The client creating the forward; "" = unowned (any caller may close it). */
  owner: string;
  signal?: AbortSignal;
}

interface OpenedForward {
  id: string;
  kind: ForwardKind;
  listenPort: number;
  listenHost: string;
  hostKey: HostKeyReport;
  jumpHostKeys: readonly HostKeyReport[];
  reused: boolean;
}

/** One row of ssh_forward_list (docs/wire-contract.md §2.5 plus host, listen_host, connections and owner). */
interface ForwardInfo {
  id: string;
  kind: ForwardKind;
  spec: string;
  listen_port: number;
  target: string;
  host: string;
  listen_host: string;
  connections: number;
  owner: string;
}

export interface ForwardRegistry {
  /** Dial (or reuse) the connection, open the listener and register it; the connection stays pinned. */
  open(request: OpenForwardRequest): Promise<OpenedForward>;
  /** The caller's forwards and the unowned ones. */
  list(clientId: string): ForwardInfo[];
  /** Close one forward and unpin its connection. Unknown id → `RelayError.untyped("unknown forward: <id>")`. */
  close(id: string, clientId: string): Promise<void>;
  /** Live forwards, whoever owns them (for the metrics gauge). */
  count(): number;
  /** Server shutdown: close every listener and tunnel now. */
  closeAll(): void;
}

interface Entry {
  id: string;
  spec: ForwardSpec;
  host: string;
  owner: string;
  runtime: ForwardRuntime;
  lease: SshLease;
}

/** The remote-forward routes and the forwards riding one pooled connection. */
interface Hub {
  routes: Map<string, RemoteConnectionHandler>;
  ids: Set<string>;
  detach(): void;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

function limitError(max: number): RelayError {
  return new RelayError("ForwardError", `forward limit reached (${max}); close an existing forward first`);
}

/**
 * Every live port forward, bound to the client that opened it (as sessions
 * are, ADR 0005). The cap is checked before dialling and again, in the same
 * tick as the insertion, once the listener is open, so concurrent calls can
 * never overshoot it.
 */
export function createForwardRegistry(
  config: ForwardRegistryConfig,
  deps: ForwardRegistryDeps,
): ForwardRegistry {
  const { directory, pool, ids } = deps;
  const logger = deps.logger ?? silentLogger;
  const forwards = new Map<string, Entry>();
  const hubs = new Map<Client, Hub>();
  let shutDown = false;

  function hubFor(client: Client): Hub {
    const existing = hubs.get(client);
    if (existing) return existing;
    const routes = new Map<string, RemoteConnectionHandler>();
    const hubIds = new Set<string>();
    const onTcp = (
      info: TcpConnectionDetails,
      accept: AcceptConnection<ClientChannel>,
      reject: RejectConnection,
    ) => {
      let handler = routes.get(`${info.destIP}:${info.destPort}`);
      if (!handler) {
        // Servers differ in how they echo a wildcard address; the port alone is then unambiguous.
        const byPort = [...routes.entries()].filter(([key]) => key.endsWith(`:${info.destPort}`));
        if (byPort.length === 1) handler = byPort[0]?.[1];
      }
      if (handler) handler(info, accept, reject);
      else reject();
    };
    const onClose = () => {
      for (const id of [...hubIds]) lost(id);
    };
    client.on("tcp connection", onTcp);
    client.on("close", onClose);
    const hub: Hub = {
      routes,
      ids: hubIds,
      detach() {
        client.off("tcp connection", onTcp);
        client.off("close", onClose);
        hubs.delete(client);
      },
    };
    hubs.set(client, hub);
    return hub;
  }

  function maybeDetach(client: Client): void {
    const hub = hubs.get(client);
    if (hub && hub.ids.size === 0 && hub.routes.size === 0) hub.detach();
  }

  function route(client: Client, address: string, port: number, handler: RemoteConnectionHandler) {
    const key = `${address}:${port}`;
    hubFor(client).routes.set(key, handler);
    return () => {
      const hub = hubs.get(client);
      if (hub?.routes.get(key) === handler) hub.routes.delete(key);
      maybeDetach(client);
    };
  }

  function remove(entry: Entry): void {
    forwards.delete(entry.id);
    const hub = hubs.get(entry.lease.client);
    hub?.ids.delete(entry.id);
    maybeDetach(entry.lease.client);
  }

  /** The SSH connection under a forward closed: the forward cannot carry anything any more. */
  function lost(id: string): void {
    const entry = forwards.get(id);
    if (!entry) return;
    remove(entry);
    entry.runtime.destroy();
    entry.lease.release();
    logger.warn({ forward: id, host: entry.host }, "forward closed: its SSH connection ended");
  }

  function newId(): string {
    for (;;) {
      const id = `fwd-${ids.hex(6)}`;
      if (!forwards.has(id)) return id;
    }
  }

  async function startOn(request: OpenForwardRequest): Promise<{ runtime: ForwardRuntime; lease: SshLease }> {
    const target = directory.resolve(request.host, request.overrides);
    // A connection that died between uses fails the remote listen request; the pool dials once more.
    const { lease, value: runtime } = await pool.open(
      target,
      request.signal ? { signal: request.signal } : {},
      (opened) =>
        startForward({
          client: opened.client,
          spec: request.spec,
          bindAny: config.bindAny,
          route,
          requestTimeoutMs: config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
          logger,
        }),
    );
    return { runtime, lease };
  }

  return {
    async open(request) {
      if (shutDown) throw new RelayError("ForwardError", "the server is shutting down");
      if (forwards.size >= config.maxForwards) throw limitError(config.maxForwards);
      const { runtime, lease } = await startOn(request);
      const refusal = shutDown
        ? new RelayError("ForwardError", "the server is shutting down")
        : request.signal?.aborted
          ? new RelayError("CancelledError", "the call was cancelled")
          : forwards.size >= config.maxForwards
            ? limitError(config.maxForwards)
            : null;
      if (refusal) {
        // Lost the race for the last slot (or the call went away): the new listener goes.
        await runtime.close();
        lease.release();
        throw refusal;
      }
      const id = newId();
      forwards.set(id, { id, spec: request.spec, host: request.host, owner: request.owner, runtime, lease });
      hubFor(lease.client).ids.add(id);
      return {
        id,
        kind: request.spec.kind,
        listenPort: runtime.listenPort,
        listenHost: runtime.listenHost,
        hostKey: lease.hostKey,
        jumpHostKeys: lease.jumpHostKeys,
        reused: lease.reused,
      };
    },

    list(clientId) {
      return [...forwards.values()]
        .filter((f) => f.owner === "" || f.owner === clientId)
        .map((f) => ({
          id: f.id,
          kind: f.spec.kind,
          spec: f.spec.text,
          listen_port: f.runtime.listenPort,
          target: f.spec.dest ? destinationText(f.spec.dest) : "socks",
          host: f.host,
          listen_host: f.runtime.listenHost,
          connections: f.runtime.connections(),
          owner: f.owner,
        }));
    },

    async close(id, clientId) {
      const entry = forwards.get(id);
      if (!entry) throw RelayError.untyped(`unknown forward: ${id}`);
      if (entry.owner !== "" && entry.owner !== clientId) {
        throw new RelayError("ForwardError", `forward ${id} belongs to another client`);
      }
      remove(entry);
      try {
        await entry.runtime.close();
      } catch (err) {
        // The forward is gone from the registry either way; a failing close only leaves a log line.
        logger.warn({ forward: id, err: String(err) }, "forward close failed");
      } finally {
        entry.lease.release();
      }
    },

    count: () => forwards.size,

    closeAll() {
      shutDown = true;
      for (const entry of [...forwards.values()]) {
        remove(entry);
        try {
          entry.runtime.destroy();
        } catch (err) {
          logger.error({ forward: entry.id, err: String(err) }, "forward teardown failed");
        } finally {
          entry.lease.release();
        }
      }
    },
  };
}
