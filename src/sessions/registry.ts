import type { Clock, Ids, Logger } from "../core/index.js";
import { RelayError, silentLogger } from "../core/index.js";
import { openRecording, type Recording } from "./recording.js";
import { createBlockPool } from "./ring-buffer.js";
import { Session } from "./session.js";
import { resolveSignalName } from "./signals.js";
import { holderOf, terminalId } from "./terminal-id.js";
import { EMPTY_LINE, type PendingLine } from "./terminal-line.js";
import { clampTerminalSize } from "./terminal-size.js";
import type {
  AddedSession,
  AddSessionRequest,
  KillResult,
  Reaped,
  RecvResult,
  SessionKind,
  SessionRegistry,
  SessionRegistryConfig,
  SessionViewer,
  SessionWatch,
} from "./types.js";

export interface SessionRegistryDeps {
  clock: Clock;
  ids: Ids;
  logger?: Logger;
  /** Start the background sweep timer (default true); tests that drive sweep() themselves turn it off. */
  sweeper?: boolean;
}

const DEFAULT_SWEEP_MS = 1000;
const DEFAULT_ENDED_GRACE_MS = 5000;

function sessionError(message: string): RelayError {
  return new RelayError("SessionError", message);
}

/** What every operation of one registry shares: its settings and the terminals it holds. */
interface Registry {
  config: SessionRegistryConfig;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  endedGraceMs: number;
  /** This relay's name among several; "" for one relay. */
  instance: string;
  sessions: Map<string, Session>;
  /** Blocks of ended sessions' rings, for the next session (ADR 0013). */
  blocks: ReturnType<typeof createBlockPool>;
}

/**
 * The one registry of terminals, local and remote. It enforces the session
 * cap, the idle timeout and the absolute lifetime (from a background timer,
 * so a forgotten session dies even when no further call arrives), binds each
 * session to the client that created it, and tears everything down at exit.
 */
export function createSessionRegistry(
  config: SessionRegistryConfig,
  deps: SessionRegistryDeps,
): SessionRegistry {
  const r: Registry = {
    config,
    clock: deps.clock,
    ids: deps.ids,
    logger: deps.logger ?? silentLogger,
    endedGraceMs: config.endedGraceMs ?? DEFAULT_ENDED_GRACE_MS,
    instance: config.instance ?? "",
    sessions: new Map(),
    blocks: createBlockPool(),
  };
  let timer = (deps.sweeper ?? true) ? startSweeper(r) : null;
  return {
    get size() {
      return r.sessions.size;
    },
    elsewhere: async (clientId) => (config.directory ? config.directory.elsewhere(clientId) : []),
    assertCapacity() {
      sweep(r);
      if (r.sessions.size >= config.maxSessions) throw limitError(config);
    },
    add: (request) => add(r, request),
    send: (id, clientId, data, line) => send(r, id, clientId, data, line),
    pendingLine: (id, clientId) => pendingLine(r, id, clientId),
    recv: (id, clientId, request) => recv(r, id, clientId, request),
    resize: (id, clientId, cols, rows) => resize(r, id, clientId, cols, rows),
    kill: (id, clientId, signalName, close) => kill(r, id, clientId, signalName, close),
    overview: () => sessionsSeenBy(r, null),
    terminate(id) {
      const session = r.sessions.get(id);
      if (!session) return Promise.reject(sessionError(`unknown session: ${id}`));
      return closeSession(r, session, "TERM");
    },
    watch: (id, viewer) => watch(r, id, viewer),
    list: (clientId) => sessionsSeenBy(r, clientId),
    sweep: () => sweep(r),
    closeAll() {
      if (timer) clearInterval(timer);
      timer = null;
      closeAll(r);
    },
  };
}

/** The background sweep; it never keeps the server alive on its own. */
function startSweeper(r: Registry): NodeJS.Timeout {
  const timer = setInterval(() => {
    try {
      sweep(r);
    } catch (err) {
      r.logger.error({ err: String(err) }, "session sweep failed");
    }
  }, r.config.sweepIntervalMs ?? DEFAULT_SWEEP_MS);
  timer.unref();
  return timer;
}

/** Why an id is not here: unknown, or a terminal another relay holds (docs/scaling.md). */
function unknownSession(instance: string, id: string): string {
  const holder = holderOf(id);
  if (holder === "" || holder === instance) return `unknown session: ${id}`;
  return (
    `session ${id} is held by relay ${holder}, not by this one (${instance || "unnamed"}): a terminal lives in ` +
    `the relay that started it and is reached through the MCP session that started it. If that relay ` +
    `stopped, the terminal ended with it; start a new one`
  );
}

function newId(r: Registry, kind: SessionKind): string {
  for (;;) {
    const id = terminalId(kind, r.ids.hex(6), r.instance);
    if (!r.sessions.has(id)) return id;
  }
}

function limitError(config: SessionRegistryConfig): RelayError {
  return sessionError(`session limit reached (${config.maxSessions}); close idle sessions first`);
}

/** The session, if it exists and the caller may use it (owner binding, ADR 0005). */
function lookup(r: Registry, id: string, clientId: string): Session {
  const session = r.sessions.get(id);
  if (!session) throw sessionError(unknownSession(r.instance, id));
  if (session.owner !== "" && session.owner !== clientId) {
    throw sessionError(`session ${id} belongs to another client`);
  }
  return session;
}

function live(r: Registry, id: string, clientId: string): Session {
  const session = lookup(r, id, clientId);
  if (session.ended || session.closing) throw sessionError(`session ${id} has ended`);
  return session;
}

function reap(r: Registry, session: Session, reason: Reaped["reason"]): void {
  r.sessions.delete(session.id);
  r.config.directory?.withdraw(session.id);
  r.logger.info({ session: session.id, reason }, "session reaped");
  session.close().catch((err: unknown) => {
    r.logger.error({ session: session.id, err: String(err) }, "session close failed");
  });
}

/** Signal (unless it is already over), release the id, end the terminal and all in it. */
async function closeSession(r: Registry, session: Session, wanted: string): Promise<KillResult> {
  let sent = wanted;
  if (!session.ended && !session.closing) sent = session.transport.signal(wanted);
  r.sessions.delete(session.id);
  r.config.directory?.withdraw(session.id);
  await session.close();
  return { signal: `SIG${sent}`, closed: true };
}

function sweep(r: Registry): Reaped[] {
  const now = r.clock.monotonic();
  const reaped: Reaped[] = [];
  for (const session of [...r.sessions.values()]) {
    const reason = reapReason(r, session, now);
    if (reason) {
      reap(r, session, reason);
      reaped.push({ id: session.id, reason });
    }
  }
  return reaped;
}

/** Why a session is reaped now, or null while it may stay. */
function reapReason(r: Registry, session: Session, now: number): Reaped["reason"] | null {
  const { config } = r;
  // The lifetime is absolute: even a waiting read does not extend it.
  if (now - session.createdAt >= config.lifetimeMs) return "lifetime";
  if (session.waiting > 0) return null;
  if (now - session.lastUsed >= config.idleTimeoutMs) return "idle";
  if (session.ended && session.buffered === 0 && now - session.lastUsed >= r.endedGraceMs) return "ended";
  return null;
}

async function add(r: Registry, request: AddSessionRequest): Promise<AddedSession> {
  const { config, clock } = r;
  sweep(r);
  const refuse = async (err: unknown): Promise<never> => {
    await request.transport.close().catch(() => undefined);
    throw err;
  };
  if (r.sessions.size >= config.maxSessions) return refuse(limitError(config));
  const id = newId(r, request.kind);
  let recording: Recording | null = null;
  try {
    recording = recordingOf(r, request, id);
  } catch (err) {
    // Recording is a control the operator asked for: no recording, no session.
    const reason = err instanceof Error ? err.message : String(err);
    return refuse(sessionError(`cannot open the session recording: ${reason}`));
  }
  const session = new Session({
    id,
    kind: request.kind,
    title: request.title,
    owner: request.owner,
    cols: request.cols,
    rows: request.rows,
    transport: request.transport,
    bufferBytes: config.bufferBytes,
    blocks: r.blocks,
    recording,
    clock,
  });
  r.sessions.set(id, session);
  session.attach();
  config.directory?.announce({
    id,
    kind: request.kind,
    title: request.title,
    owner: request.owner,
    startedAt: clock.now(),
  });
  return { id, recording: recording?.path ?? "" };
}

/** The session's recording when sessions are recorded; null when they are not. Throws when it cannot be opened. */
function recordingOf(r: Registry, request: AddSessionRequest, id: string): Recording | null {
  const { config } = r;
  if (config.recordDir === "") return null;
  return openRecording({
    dir: config.recordDir,
    id,
    cols: request.cols,
    rows: request.rows,
    command: request.title,
    recordInput: config.recordInput,
    clock: r.clock,
  });
}

function send(
  r: Registry,
  id: string,
  clientId: string,
  data: Uint8Array,
  line: PendingLine | undefined,
): number {
  const session = live(r, id, clientId);
  session.touch();
  session.write(data);
  // Only what reached the terminal moves its line on: a refused or failed send changes nothing.
  if (line) session.line = line;
  return data.length;
}

function pendingLine(r: Registry, id: string, clientId: string): PendingLine {
  const session = r.sessions.get(id);
  if (!session || session.ended || session.closing) return EMPTY_LINE;
  if (session.owner !== "" && session.owner !== clientId) return EMPTY_LINE;
  return session.line;
}

async function recv(
  r: Registry,
  id: string,
  clientId: string,
  request: Parameters<SessionRegistry["recv"]>[2],
): Promise<RecvResult> {
  const session = lookup(r, id, clientId);
  session.touch();
  session.waiting += 1;
  try {
    return await session.read(request.timeoutMs, request.maxBytes, request.signal);
  } finally {
    session.waiting -= 1;
    session.touch();
  }
}

function resize(r: Registry, id: string, clientId: string, cols: number, rows: number) {
  const session = live(r, id, clientId);
  session.touch();
  const size = clampTerminalSize(cols, rows);
  session.resize(size.cols, size.rows);
  return size;
}

async function kill(
  r: Registry,
  id: string,
  clientId: string,
  signalName: string,
  close: boolean,
): Promise<KillResult> {
  const session = lookup(r, id, clientId);
  session.touch();
  const wanted = resolveSignalName(signalName);
  if (!close) {
    if (session.ended || session.closing) throw sessionError(`session ${id} has ended`);
    return { signal: `SIG${session.transport.signal(wanted)}`, closed: false };
  }
  return closeSession(r, session, wanted);
}

/** Every session (null: the operator's overview) or those `clientId` may use, after a sweep. */
function sessionsSeenBy(r: Registry, clientId: string | null) {
  sweep(r);
  const now = r.clock.monotonic();
  return [...r.sessions.values()]
    .filter((s) => clientId === null || s.owner === "" || s.owner === clientId)
    .map((s) => s.info(now));
}

function watch(r: Registry, id: string, viewer: SessionViewer): SessionWatch {
  const session = r.sessions.get(id);
  if (!session) throw sessionError(`unknown session: ${id}`);
  if (session.ended || session.closing) throw sessionError(`session ${id} has ended`);
  const stop = session.watch(viewer);
  return {
    cols: session.cols,
    rows: session.rows,
    title: session.title,
    recording: session.recording?.path ?? "",
    stop,
  };
}

function closeAll(r: Registry): void {
  for (const session of r.sessions.values()) {
    try {
      session.destroy();
    } catch (err) {
      r.logger.error({ session: session.id, err: String(err) }, "session teardown failed");
    }
  }
  r.sessions.clear();
}
