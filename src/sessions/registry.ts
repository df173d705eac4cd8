import type { Clock, Ids, Logger } from "../core/index.js";
import { RelayError, silentLogger } from "../core/index.js";
import { openRecording, type Recording } from "./recording.js";
import { createBlockPool } from "./ring-buffer.js";
import { Session } from "./session.js";
import { resolveSignalName } from "./signals.js";
import { holderOf, terminalId } from "./terminal-id.js";
import { EMPTY_LINE } from "./terminal-line.js";
import { clampTerminalSize } from "./terminal-size.js";
import type {
  AddedSession,
  AddSessionRequest,
  KillResult,
  Reaped,
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
  const { clock, ids } = deps;
  const logger = deps.logger ?? silentLogger;
  const endedGraceMs = config.endedGraceMs ?? DEFAULT_ENDED_GRACE_MS;
  const instance = config.instance ?? "";

  /** Why an id is not here: unknown, or a terminal another relay holds (docs/scaling.md). */
  function unknownSession(id: string): string {
    const holder = holderOf(id);
    if (holder === "" || holder === instance) return `unknown session: ${id}`;
    return (
      `session ${id} is held by relay ${holder}, not by this one (${instance || "unnamed"}): a terminal lives in ` +
      `the relay that started it and is reached through the MCP session that started it. If that relay ` +
      `stopped, the terminal ended with it; start a new one`
    );
  }
  const sessions = new Map<string, Session>();
  // Blocks of ended sessions' rings, for the next session (ADR 0013).
  const blocks = createBlockPool();

  let timer: NodeJS.Timeout | null = null;
  if (deps.sweeper ?? true) {
    timer = setInterval(() => {
      try {
        sweep();
      } catch (err) {
        logger.error({ err: String(err) }, "session sweep failed");
      }
    }, config.sweepIntervalMs ?? DEFAULT_SWEEP_MS);
    // The sweep must never keep the server alive on its own.
    timer.unref();
  }

  function newId(kind: SessionKind): string {
    for (;;) {
      const id = terminalId(kind, ids.hex(6), instance);
      if (!sessions.has(id)) return id;
    }
  }

  function limitError(): RelayError {
    return sessionError(`session limit reached (${config.maxSessions}); close idle sessions first`);
  }

  /** The session, if it exists and the caller may use it (owner binding, ADR 0005). */
  function lookup(id: string, clientId: string): Session {
    const session = sessions.get(id);
    if (!session) throw sessionError(unknownSession(id));
    if (session.owner !== "" && session.owner !== clientId) {
      throw sessionError(`session ${id} belongs to another client`);
    }
    return session;
  }

  function live(id: string, clientId: string): Session {
    const session = lookup(id, clientId);
    if (session.ended || session.closing) throw sessionError(`session ${id} has ended`);
    return session;
  }

  function reap(session: Session, reason: Reaped["reason"]): void {
    sessions.delete(session.id);
    config.directory?.withdraw(session.id);
    logger.info({ session: session.id, reason }, "session reaped");
    session.close().catch((err: unknown) => {
      logger.error({ session: session.id, err: String(err) }, "session close failed");
    });
  }

  /** Signal (unless it is already over), release the id, end the terminal and all in it. */
  async function closeSession(session: Session, wanted: string): Promise<KillResult> {
    let sent = wanted;
    if (!session.ended && !session.closing) sent = session.transport.signal(wanted);
    sessions.delete(session.id);
    config.directory?.withdraw(session.id);
    await session.close();
    return { signal: `SIG${sent}`, closed: true };
  }

  function sweep(): Reaped[] {
    const now = clock.monotonic();
    const reaped: Reaped[] = [];
    for (const session of [...sessions.values()]) {
      let reason: Reaped["reason"] | null = null;
      // The lifetime is absolute: even a waiting read does not extend it.
      if (now - session.createdAt >= config.lifetimeMs) reason = "lifetime";
      else if (session.waiting > 0) continue;
      else if (now - session.lastUsed >= config.idleTimeoutMs) reason = "idle";
      else if (session.ended && session.buffered === 0 && now - session.lastUsed >= endedGraceMs)
        reason = "ended";
      if (reason) {
        reap(session, reason);
        reaped.push({ id: session.id, reason });
      }
    }
    return reaped;
  }

  return {
    get size() {
      return sessions.size;
    },

    elsewhere: async (clientId) => (config.directory ? config.directory.elsewhere(clientId) : []),

    assertCapacity() {
      sweep();
      if (sessions.size >= config.maxSessions) throw limitError();
    },

    async add(request: AddSessionRequest): Promise<AddedSession> {
      sweep();
      const refuse = async (err: unknown): Promise<never> => {
        await request.transport.close().catch(() => undefined);
        throw err;
      };
      if (sessions.size >= config.maxSessions) return refuse(limitError());
      const id = newId(request.kind);
      let recording: Recording | null = null;
      if (config.recordDir !== "") {
        try {
          recording = openRecording({
            dir: config.recordDir,
            id,
            cols: request.cols,
            rows: request.rows,
            command: request.title,
            recordInput: config.recordInput,
            clock,
          });
        } catch (err) {
          // Recording is a control the operator asked for: no recording, no session.
          const reason = err instanceof Error ? err.message : String(err);
          return refuse(sessionError(`cannot open the session recording: ${reason}`));
        }
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
        blocks,
        recording,
        clock,
      });
      sessions.set(id, session);
      session.attach();
      config.directory?.announce({
        id,
        kind: request.kind,
        title: request.title,
        owner: request.owner,
        startedAt: clock.now(),
      });
      return { id, recording: recording?.path ?? "" };
    },

    send(id, clientId, data, line) {
      const session = live(id, clientId);
      session.touch();
      session.write(data);
      // Only what reached the terminal moves its line on: a refused or failed send changes nothing.
      if (line) session.line = line;
      return data.length;
    },

    pendingLine(id, clientId) {
      const session = sessions.get(id);
      if (!session || session.ended || session.closing) return EMPTY_LINE;
      if (session.owner !== "" && session.owner !== clientId) return EMPTY_LINE;
      return session.line;
    },

    async recv(id, clientId, request) {
      const session = lookup(id, clientId);
      session.touch();
      session.waiting += 1;
      try {
        return await session.read(request.timeoutMs, request.maxBytes, request.signal);
      } finally {
        session.waiting -= 1;
        session.touch();
      }
    },

    resize(id, clientId, cols, rows) {
      const session = live(id, clientId);
      session.touch();
      const size = clampTerminalSize(cols, rows);
      session.resize(size.cols, size.rows);
      return size;
    },

    async kill(id, clientId, signalName, close): Promise<KillResult> {
      const session = lookup(id, clientId);
      session.touch();
      const wanted = resolveSignalName(signalName);
      if (!close) {
        if (session.ended || session.closing) throw sessionError(`session ${id} has ended`);
        return { signal: `SIG${session.transport.signal(wanted)}`, closed: false };
      }
      return closeSession(session, wanted);
    },

    overview() {
      sweep();
      const now = clock.monotonic();
      return [...sessions.values()].map((s) => s.info(now));
    },

    terminate(id) {
      const session = sessions.get(id);
      if (!session) return Promise.reject(sessionError(`unknown session: ${id}`));
      return closeSession(session, "TERM");
    },

    watch(id: string, viewer: SessionViewer): SessionWatch {
      const session = sessions.get(id);
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
    },

    list(clientId) {
      sweep();
      const now = clock.monotonic();
      return [...sessions.values()]
        .filter((s) => s.owner === "" || s.owner === clientId)
        .map((s) => s.info(now));
    },

    sweep,

    closeAll() {
      if (timer) clearInterval(timer);
      timer = null;
      for (const session of sessions.values()) {
        try {
          session.destroy();
        } catch (err) {
          logger.error({ session: session.id, err: String(err) }, "session teardown failed");
        }
      }
      sessions.clear();
    },
  };
}
