import type { TerminalEvents } from "../core/index.js";
import type { Subreaper } from "../proc/index.js";
import type { PendingLine } from "./terminal-line.js";
export type SessionKind = "local" | "ssh";

/** What a transport reports to the session that owns it. */
/** What a transport reports to its session (defined in core, where the SSH layer meets it too). */
export type TransportEvents = TerminalEvents;

/**
 * One terminal, local or remote. The registry drives every kind through this
 * interface: the local PTY implements it now, the SSH layer implements it for
 * remote PTYs.
 */
export interface SessionTransport {
  readonly kind: SessionKind;
  /**
   * Start delivering events. Output and an exit that happen before this call
   * are held and delivered in order once it is made.
   */
  start(events: TransportEvents): void;
  /** Queue keystrokes for the terminal. */
  write(data: Uint8Array): void;
  resize(cols: number, rows: number): void;
  /**
   * Deliver a signal, given as a canonical name without `SIG` (`INT`, `TERM`).
   * Returns the name of the signal actually delivered: a transport that
   * cannot send the requested one says what it sent instead.
   */
  signal(name: string): string;
  /** End the terminal and everything running in it; resolves once it is gone (bounded wait). */
  close(): Promise<void>;
  /** Synchronous last resort at server exit: kill everything without waiting. */
  destroy(): void;
}

/**
 * Finds what a terminal's processes started and left, wherever it went: a
 * process that called setsid() leaves the terminal's session, and once its
 * parent dies only a subreaper still knows it (docs/adr/0019). The server
 * supplies one; without it, a session reaches only its own session's members.
 */
export type DescendantReaper = Pick<Subreaper, "track">;

/** Settings slice of the registry (docs/wire-contract.md §4.3), in milliseconds and bytes. */
export interface SessionRegistryConfig {
  maxSessions: number;
  idleTimeoutMs: number;
  lifetimeMs: number;
  bufferBytes: number;
  /** "" = no recordings. */
  recordDir: string;
  recordInput: boolean;
  /** How often the background sweep runs; default 1000 ms. */
  sweepIntervalMs?: number;
  /** An ended session whose output was read is removed after this much idle time; default 5000 ms. */
  endedGraceMs?: number;
  /** This relay's name among several, carried in every terminal id; "" (default) for one relay. */
  instance?: string;
  /** Where the other relays learn which terminals this one holds (several relays, docs/scaling.md). */
  directory?: TerminalDirectory;
}

/** A terminal another relay holds, as the shared directory lists it. */
interface RemoteTerminal {
  id: string;
  instance: string;
  kind: string;
  title: string;
  owner: string;
  /** Epoch milliseconds. */
  startedAt: number;
  /** false when its relay stopped beating: the terminal ended with it. */
  relayUp: boolean;
}

/** The shared list of terminals by relay; it describes, it never decides, and it never throws. */
interface TerminalDirectory {
  announce(entry: { id: string; kind: string; title: string; owner: string; startedAt: number }): void;
  withdraw(id: string): void;
  elsewhere(owner: string): Promise<RemoteTerminal[]>;
}

export interface AddSessionRequest {
  kind: SessionKind;
  /** What runs: the argv joined by spaces, or `ssh <host>`. */
  title: string;
  /** The client that created the session; "" when unknown (then any caller may use it). */
  owner: string;
  cols: number;
  rows: number;
  transport: SessionTransport;
}

export interface AddedSession {
  id: string;
  /** Path of the asciicast recording, or "" when sessions are not recorded. */
  recording: string;
}

interface RecvRequest {
  timeoutMs: number;
  maxBytes: number;
  signal?: AbortSignal;
}

export interface RecvResult {
  text: string;
  /** The session has ended and everything it printed has been read. */
  ended: boolean;
  exitCode: number | null;
  /** Raw terminal bytes this read consumed. */
  bytes: number;
}

export interface KillResult {
  /** The signal actually sent, with its `SIG` prefix. */
  signal: string;
  closed: boolean;
}

/** One row of session_list (docs/wire-contract.md §2.6 plus owner, input bytes and recording). */
export interface SessionInfo {
  id: string;
  kind: SessionKind;
  title: string;
  size: string;
  age_s: number;
  idle_s: number;
  buffered: number;
  produced: number;
  dropped: number;
  bytes_in: number;
  closed: boolean;
  exit_code: number | null;
  owner: string;
  recording: string;
}

/** An onlooker of a session's output (the operator console's live follow); it consumes nothing. */
export interface SessionViewer {
  output(chunk: Uint8Array): void;
  resize(cols: number, rows: number): void;
  ended(exitCode: number | null): void;
}

/** A session being watched: its size and recording when the watch began, and how to stop watching. */
export interface SessionWatch {
  cols: number;
  rows: number;
  title: string;
  /** The recording's path, or "": every output event up to now is in it when the watch begins. */
  recording: string;
  stop(): void;
}

type ReapReason = "lifetime" | "idle" | "ended";

export interface Reaped {
  id: string;
  reason: ReapReason;
}

export interface SessionRegistry {
  /** Refuse early, before anything is spawned, when no slot is free (sweeps first). */
  assertCapacity(): void;
  /**
   * Register a started transport. When the registry is full, or the recording
   * cannot be opened, the transport is closed (its child reaped) and a
   * SessionError is thrown.
   */
  add(request: AddSessionRequest): Promise<AddedSession>;
  /**
   * Write keystrokes; returns the number of bytes written. `line` is what is
   * pending on the terminal after them (terminal-line.ts): it replaces the
   * session's pending line only once the bytes were written.
   */
  send(id: string, clientId: string, data: Uint8Array, line?: PendingLine): number;
  /**
   * What was sent to a session since its last Enter, as `clientId` may see it:
   * the empty line for a session that is unknown, another client's, or ended
   * (a send to it is refused anyway).
   */
  pendingLine(id: string, clientId: string): PendingLine;
  recv(id: string, clientId: string, request: RecvRequest): Promise<RecvResult>;
  /** Returns the size applied. */
  resize(id: string, clientId: string, cols: number, rows: number): { cols: number; rows: number };
  kill(id: string, clientId: string, signalName: string, close: boolean): Promise<KillResult>;
  /** The caller's sessions and the unowned ones, after a sweep. */
  list(clientId: string): SessionInfo[];
  /** The caller's and the unowned terminals other relays hold; none for a relay on its own. */
  elsewhere(clientId: string): Promise<RemoteTerminal[]>;
  /** Every live session, whoever owns it: the operator's view (docs/console.md#sessions). */
  overview(): SessionInfo[];
  /**
   * The operator's kill: SIGTERM, then the session is closed and everything
   * in it killed, whoever owns it. Throws for an unknown session.
   */
  terminate(id: string): Promise<KillResult>;
  /**
   * Start showing a live session's output to `viewer`, whoever owns it.
   * Throws for an unknown or ended session.
   */
  watch(id: string, viewer: SessionViewer): SessionWatch;
  /** Reap what is past its lifetime, idle too long, or ended and read; runs in the background too. */
  sweep(): Reaped[];
  /** Live sessions, whoever owns them. */
  readonly size: number;
  /** Server shutdown: kill every session's processes now, close recordings, stop the sweeper. */
  closeAll(): void;
}
