import type { Client } from "ssh2";
import { type Clock, RelayError } from "../core/index.js";
import { untilAborted } from "./abortable.js";
import type { Dialer } from "./dial.js";
import { isConnectionUnusable, viaJump } from "./errors.js";
import type { HostKeyReport } from "./host-key.js";
import { type SshTarget, targetKey } from "./target.js";

export interface SshPoolConfig {
  /** RELAY_SHELL_MAX_CONNS: cached connections; in-use ones may exceed it transiently. */
  maxConns: number;
  /** RELAY_SHELL_SSH_IDLE_TIMEOUT in seconds; 0 = never close idle connections. */
  idleTimeoutSeconds: number;
  /** RELAY_SHELL_SSH_KEEPALIVE in seconds; 0 = off. */
  keepaliveSeconds: number;
  /** RELAY_SHELL_SSH_CONNECT_TIMEOUT in seconds: the default for acquire(). */
  connectTimeoutSeconds: number;
}

export interface SshPoolDeps {
  dial: Dialer;
  clock: Clock;
  /** Start the unref'd idle sweep timer (default true; tests drive sweep() by hand). */
  sweepTimer?: boolean;
}

/**
 * A pinned use of a pooled connection. While any lease is held the
 * connection is neither evicted (LRU) nor idle-closed; a connection that
 * closes is dropped even when leased, and the lease's calls then fail.
 */
export interface SshLease {
  readonly client: Client;
  readonly key: string;
  /** The target's host-key outcome: `learned` only for the call whose dial learned it. */
  readonly hostKey: HostKeyReport;
  /** The bastions' host-key outcomes, first hop first (empty without a jump). */
  readonly jumpHostKeys: readonly HostKeyReport[];
  /** true when an existing connection was reused. */
  readonly reused: boolean;
  /**
   * Take this connection out of the pool (a channel it could not open on
   * reuse): new calls dial afresh; it closes once nothing holds it, so the
   * terminals, forwards and transfers already on it go on until they end.
   */
  discard(): void;
  /** Unpin; idempotent. */
  release(): void;
}

export interface AcquireOptions {
  /** Dial timeout in seconds (each hop); default the pool's connect timeout. */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

interface SshPoolStats {
  open: number;
  pinned: number;
  dialing: number;
}

/** A lease and what was opened on it. */
export interface OpenedOnLease<T> {
  lease: SshLease;
  value: T;
}

export interface SshPool {
  acquire(target: SshTarget, options?: AcquireOptions): Promise<SshLease>;
  /**
   * Acquire a connection and open something on it (a channel, a listener).
   * A pooled connection can die between uses (server restart, network)
   * before the pool sees it close; that is not the caller's problem. So when
   * `start` fails on a reused connection with an error that says the
   * connection could not take the request (`isConnectionUnusable`), that
   * connection is discarded and a fresh one tried, exactly once. Any other
   * failure, and any failure on a freshly dialled connection, is the answer.
   * On success the caller holds the lease; on failure it is released.
   */
  open<T>(
    target: SshTarget,
    options: AcquireOptions,
    start: (lease: SshLease) => Promise<T>,
  ): Promise<OpenedOnLease<T>>;
  /** Close idle unpinned connections, oldest first (also runs before every acquire). */
  sweep(): void;
  stats(): SshPoolStats;
  /** Shutdown: cancel dials, close every connection; a dial finishing later is discarded. */
  closeAll(): void;
}

interface Entry {
  key: string;
  client: Client;
  hostKey: HostKeyReport;
  jumpHostKeys: HostKeyReport[];
  pins: number;
  lastUsed: number;
  closed: boolean;
  /** Out of the pool, closed when its last lease is released. */
  retired: boolean;
  /** Releases the lease this connection holds on its bastion. */
  releaseVia: () => void;
}

interface Pending {
  promise: Promise<Entry>;
  abort: AbortController;
}

/** One pool's state: its connections in LRU order, the dials under way, those retired but held. */
interface Pool {
  config: SshPoolConfig;
  clock: Clock;
  dial: Dialer;
  /** Map order is the LRU order: a use moves the entry to the end. */
  entries: Map<string, Entry>;
  pending: Map<string, Pending>;
  /** Out of the pool but still held: closed on their last release, or at shutdown. */
  retired: Set<Entry>;
  shutDown: boolean;
}

export function createSshPool(config: SshPoolConfig, deps: SshPoolDeps): SshPool {
  const p: Pool = {
    config,
    clock: deps.clock,
    dial: deps.dial,
    entries: new Map(),
    pending: new Map(),
    retired: new Set(),
    shutDown: false,
  };
  let timer: NodeJS.Timeout | null = null;
  if (deps.sweepTimer !== false && config.idleTimeoutSeconds > 0) {
    const every = Math.min(60_000, Math.max(1000, (config.idleTimeoutSeconds * 1000) / 4));
    timer = setInterval(() => sweep(p), every);
    // The sweep never keeps the process alive on its own.
    timer.unref();
  }
  return {
    acquire: (target, options) => acquire(p, target, options),
    open: (target, options, start) => open(p, target, options, start),
    sweep: () => sweep(p),
    stats() {
      let pinned = 0;
      for (const entry of p.entries.values()) if (entry.pins > 0) pinned++;
      return { open: p.entries.size, pinned, dialing: p.pending.size };
    },
    closeAll() {
      p.shutDown = true;
      if (timer) clearInterval(timer);
      for (const slot of p.pending.values()) slot.abort.abort();
      for (const entry of [...p.entries.values(), ...p.retired]) drop(p, entry);
    },
  };
}

function drop(p: Pool, entry: Entry): void {
  if (p.entries.get(entry.key) === entry) p.entries.delete(entry.key);
  p.retired.delete(entry);
  if (!entry.closed) {
    entry.closed = true;
    entry.client.end();
  }
  entry.releaseVia();
}

function retire(p: Pool, entry: Entry): void {
  if (p.entries.get(entry.key) === entry) p.entries.delete(entry.key);
  entry.retired = true;
  p.retired.add(entry);
  if (entry.pins === 0) drop(p, entry);
}

/**
 * Close the idle unpinned connections. The map is in LRU order (a lease and
 * its release move an entry to the recent end), so the walk stops at the
 * first unpinned entry still within its idle time: every later one is more
 * recent. It runs before every acquire, so it must not cost a pass over a
 * thousand-host pool. A closed entry leaves the map when it closes; one met
 * on the way is purged.
 */
function sweep(p: Pool): void {
  const now = p.clock.monotonic();
  const idleMs = p.config.idleTimeoutSeconds * 1000;
  for (const entry of p.entries.values()) {
    if (entry.closed) drop(p, entry);
    else if (entry.pins > 0) continue;
    else if (idleMs > 0 && now - entry.lastUsed > idleMs) drop(p, entry);
    else break;
  }
}

function makeRoom(p: Pool): void {
  for (const entry of p.entries.values()) {
    if (p.entries.size < p.config.maxConns) return;
    if (entry.pins === 0) drop(p, entry);
  }
}

/** Moves a pooled entry to the recent end of the LRU order. */
function touch(p: Pool, entry: Entry): void {
  p.entries.delete(entry.key);
  p.entries.set(entry.key, entry);
}

function lease(p: Pool, entry: Entry, reused: boolean): SshLease {
  entry.pins++;
  entry.lastUsed = p.clock.monotonic();
  // A use moves it to the recent end of the LRU order; a retired one stays out of the pool.
  if (!entry.retired) {
    p.entries.delete(entry.key);
    if (!entry.closed) p.entries.set(entry.key, entry);
  }
  let released = false;
  // A reused connection did not learn anything now: a first-contact pin is old news.
  const settle = (r: HostKeyReport): HostKeyReport =>
    reused && r.status === "learned" ? { ...r, status: "verified" } : r;
  return {
    client: entry.client,
    key: entry.key,
    hostKey: settle(entry.hostKey),
    jumpHostKeys: entry.jumpHostKeys.map(settle),
    reused,
    discard() {
      retire(p, entry);
    },
    release() {
      if (released) return;
      released = true;
      unpin(p, entry);
    },
  };
}

/** The end of a use: it counts as a use; a retired entry closes once nothing holds it. */
function unpin(p: Pool, entry: Entry): void {
  entry.pins--;
  entry.lastUsed = p.clock.monotonic();
  if (entry.retired) {
    if (entry.pins === 0) drop(p, entry);
    return;
  }
  if (p.entries.get(entry.key) === entry) touch(p, entry);
}

/** The bastion of a target behind a jump, itself a pooled connection held for as long as this one lives. */
async function bastionLease(
  p: Pool,
  target: SshTarget,
  timeoutSeconds: number,
  signal: AbortSignal,
): Promise<SshLease | null> {
  const last = target.jump.at(-1);
  if (!last) return null;
  const hop: SshTarget = { ...last, jump: target.jump.slice(0, -1) };
  try {
    return await acquire(p, hop, { timeoutSeconds, signal });
  } catch (err) {
    throw err instanceof RelayError ? viaJump(err, last.label) : err;
  }
}

async function dialEntry(
  p: Pool,
  target: SshTarget,
  key: string,
  timeoutSeconds: number,
  signal: AbortSignal,
): Promise<Entry> {
  let viaLease = await bastionLease(p, target, timeoutSeconds, signal);
  const last = target.jump.at(-1);
  let dialed: Awaited<ReturnType<Dialer>>;
  try {
    dialed = await p.dial(target, {
      timeoutMs: timeoutSeconds * 1000,
      keepaliveMs: p.config.keepaliveSeconds * 1000,
      signal,
      ...(viaLease ? { via: viaLease.client } : {}),
    });
  } catch (err) {
    viaLease?.release();
    if (last && err instanceof RelayError && err.code === "tunnel_refused") throw viaJump(err, last.label);
    throw err;
  }
  const entry: Entry = {
    key,
    client: dialed.client,
    hostKey: dialed.hostKey,
    jumpHostKeys: viaLease ? [...viaLease.jumpHostKeys, viaLease.hostKey] : [],
    pins: 0,
    lastUsed: p.clock.monotonic(),
    closed: false,
    retired: false,
    releaseVia: () => {
      viaLease?.release();
      viaLease = null;
    },
  };
  const markClosed = () => {
    entry.closed = true;
    drop(p, entry);
  };
  dialed.client.on("close", markClosed);
  dialed.client.on("end", markClosed);
  // A late error (keepalive timeout, reset) must never crash the process; close handles the rest.
  dialed.client.on("error", () => undefined);
  return entry;
}

async function acquire(p: Pool, target: SshTarget, options: AcquireOptions = {}): Promise<SshLease> {
  if (p.shutDown) throw new RelayError("ConnectionError", "the SSH pool is shut down");
  sweep(p);
  const key = targetKey(target);
  const existing = p.entries.get(key);
  if (existing && !existing.closed) return lease(p, existing, true);
  const slot = p.pending.get(key) ?? startDial(p, target, key, options);
  const entry = await untilAborted(slot.promise, options.signal, "the call was cancelled");
  if (entry.closed)
    throw new RelayError("ConnectionError", `connection to ${target.label} closed before use`);
  return lease(p, entry, false);
}

/** One dial per key however many callers wait; cancelling a waiter does not cancel it. */
function startDial(p: Pool, target: SshTarget, key: string, options: AcquireOptions): Pending {
  const abort = new AbortController();
  const timeoutSeconds = options.timeoutSeconds ?? p.config.connectTimeoutSeconds;
  const promise = dialEntry(p, target, key, timeoutSeconds, abort.signal).then(
    (entry) => {
      p.pending.delete(key);
      if (p.shutDown) {
        drop(p, entry);
        throw new RelayError("ConnectionError", "the SSH pool was shut down while dialling");
      }
      makeRoom(p);
      // It joins at the recent end, so its idle time starts now, not when the dial began.
      entry.lastUsed = p.clock.monotonic();
      p.entries.set(key, entry);
      return entry;
    },
    (err: unknown) => {
      // A failed dial leaves nothing behind: the next caller dials again.
      p.pending.delete(key);
      throw err;
    },
  );
  const slot = { promise, abort };
  p.pending.set(key, slot);
  return slot;
}

async function open<T>(
  p: Pool,
  target: SshTarget,
  options: AcquireOptions,
  start: (lease: SshLease) => Promise<T>,
): Promise<OpenedOnLease<T>> {
  for (let attempt = 0; ; attempt++) {
    const lease = await acquire(p, target, options);
    try {
      return { lease, value: await start(lease) };
    } catch (err) {
      const stale = attempt === 0 && lease.reused && isConnectionUnusable(err);
      if (stale) lease.discard();
      lease.release();
      if (!stale) throw err;
    }
  }
}
