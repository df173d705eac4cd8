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

/** One registry's state: its settings and dependencies, the live forwards and the hubs they ride. */
interface Registry {
  config: ForwardRegistryConfig;
  directory: HostDirectory;
  pool: SshPool;
  ids: Ids;
  logger: Logger;
  forwards: Map<string, Entry>;
  hubs: Map<Client, Hub>;
  shutDown: boolean;
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
  const r: Registry = {
    config,
    directory: deps.directory,
    pool: deps.pool,
    ids: deps.ids,
    logger: deps.logger ?? silentLogger,
    forwards: new Map(),
    hubs: new Map(),
    shutDown: false,
  };
  return {
    open: (request) => open(r, request),
    list: (clientId) =>
      [...r.forwards.values()].filter((f) => f.owner === "" || f.owner === clientId).map(infoOf),
    close: (id, clientId) => close(r, id, clientId),
    count: () => r.forwards.size,
    closeAll: () => closeAll(r),
  };
}

function hubFor(r: Registry, client: Client): Hub {
  const existing = r.hubs.get(client);
  if (existing) return existing;
  const routes = new Map<string, RemoteConnectionHandler>();
  const hubIds = new Set<string>();
  const onTcp = (
    info: TcpConnectionDetails,
    accept: AcceptConnection<ClientChannel>,
    reject: RejectConnection,
  ) => {
    const handler = handlerFor(routes, info);
    if (handler) handler(info, accept, reject);
    else reject();
  };
  const onClose = () => {
    for (const id of [...hubIds]) lost(r, id);
  };
  client.on("tcp connection", onTcp);
  client.on("close", onClose);
  const hub: Hub = {
    routes,
    ids: hubIds,
    detach() {
      client.off("tcp connection", onTcp);
      client.off("close", onClose);
      r.hubs.delete(client);
    },
  };
  r.hubs.set(client, hub);
  return hub;
}

/** The remote forward a connection from the server is for, by the address and port it names. */
function handlerFor(
  routes: Map<string, RemoteConnectionHandler>,
  info: TcpConnectionDetails,
): RemoteConnectionHandler | undefined {
  const handler = routes.get(`${info.destIP}:${info.destPort}`);
  if (handler) return handler;
  // Servers differ in how they echo a wildcard address; the port alone is then unambiguous.
  const byPort = [...routes.entries()].filter(([key]) => key.endsWith(`:${info.destPort}`));
  return byPort.length === 1 ? byPort[0]?.[1] : undefined;
}

function maybeDetach(r: Registry, client: Client): void {
  const hub = r.hubs.get(client);
  if (hub && hub.ids.size === 0 && hub.routes.size === 0) hub.detach();
}

function route(r: Registry, client: Client, address: string, port: number, handler: RemoteConnectionHandler) {
  const key = `${address}:${port}`;
  hubFor(r, client).routes.set(key, handler);
  return () => {
    const hub = r.hubs.get(client);
    if (hub?.routes.get(key) === handler) hub.routes.delete(key);
    maybeDetach(r, client);
  };
}

function remove(r: Registry, entry: Entry): void {
  r.forwards.delete(entry.id);
  const hub = r.hubs.get(entry.lease.client);
  hub?.ids.delete(entry.id);
  maybeDetach(r, entry.lease.client);
}

/** The SSH connection under a forward closed: the forward cannot carry anything any more. */
function lost(r: Registry, id: string): void {
  const entry = r.forwards.get(id);
  if (!entry) return;
  remove(r, entry);
  entry.runtime.destroy();
  entry.lease.release();
  r.logger.warn({ forward: id, host: entry.host }, "forward closed: its SSH connection ended");
}

function newId(r: Registry): string {
  for (;;) {
    const id = `fwd-${r.ids.hex(6)}`;
    if (!r.forwards.has(id)) return id;
  }
}

async function startOn(
  r: Registry,
  request: OpenForwardRequest,
): Promise<{ runtime: ForwardRuntime; lease: SshLease }> {
  const { config } = r;
  const target = r.directory.resolve(request.host, request.overrides);
  // A connection that died between uses fails the remote listen request; the pool dials once more.
  const { lease, value: runtime } = await r.pool.open(
    target,
    request.signal ? { signal: request.signal } : {},
    (opened) =>
      startForward({
        client: opened.client,
        spec: request.spec,
        bindAny: config.bindAny,
        route: (client, address, port, handler) => route(r, client, address, port, handler),
        requestTimeoutMs: config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
        logger: r.logger,
      }),
  );
  return { runtime, lease };
}

async function open(r: Registry, request: OpenForwardRequest): Promise<OpenedForward> {
  const { config } = r;
  if (r.shutDown) throw new RelayError("ForwardError", "the server is shutting down");
  if (r.forwards.size >= config.maxForwards) throw limitError(config.maxForwards);
  const { runtime, lease } = await startOn(r, request);
  const refusal = r.shutDown
    ? new RelayError("ForwardError", "the server is shutting down")
    : request.signal?.aborted
      ? new RelayError("CancelledError", "the call was cancelled")
      : r.forwards.size >= config.maxForwards
        ? limitError(config.maxForwards)
        : null;
  if (refusal) {
    // Lost the race for the last slot (or the call went away): the new listener goes.
    await runtime.close();
    lease.release();
    throw refusal;
  }
  const id = newId(r);
  r.forwards.set(id, { id, spec: request.spec, host: request.host, owner: request.owner, runtime, lease });
  hubFor(r, lease.client).ids.add(id);
  return {
    id,
    kind: request.spec.kind,
    listenPort: runtime.listenPort,
    listenHost: runtime.listenHost,
    hostKey: lease.hostKey,
    jumpHostKeys: lease.jumpHostKeys,
    reused: lease.reused,
  };
}

function infoOf(f: Entry): ForwardInfo {
  return {
    id: f.id,
    kind: f.spec.kind,
    spec: f.spec.text,
    listen_port: f.runtime.listenPort,
    target: f.spec.dest ? destinationText(f.spec.dest) : "socks",
    host: f.host,
    listen_host: f.runtime.listenHost,
    connections: f.runtime.connections(),
    owner: f.owner,
  };
}

async function close(r: Registry, id: string, clientId: string): Promise<void> {
  const entry = r.forwards.get(id);
  if (!entry) throw RelayError.untyped(`unknown forward: ${id}`);
  if (entry.owner !== "" && entry.owner !== clientId) {
    throw new RelayError("ForwardError", `forward ${id} belongs to another client`);
  }
  remove(r, entry);
  try {
    await entry.runtime.close();
  } catch (err) {
    // The forward is gone from the registry either way; a failing close only leaves a log line.
    r.logger.warn({ forward: id, err: String(err) }, "forward close failed");
  } finally {
    entry.lease.release();
  }
}

function closeAll(r: Registry): void {
  r.shutDown = true;
  for (const entry of [...r.forwards.values()]) {
    remove(r, entry);
    try {
      entry.runtime.destroy();
    } catch (err) {
      r.logger.error({ forward: entry.id, err: String(err) }, "forward teardown failed");
    } finally {
      entry.lease.release();
    }
  }
}
