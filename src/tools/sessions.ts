import type { Settings } from "../config/index.js";
import { clamp, RelayError } from "../core/index.js";
import { buildEnv, splitShellWords } from "../exec/index.js";
import type { TierSpec } from "../policy/index.js";
import { annotationsFor, defineTool, type TierFloor, type Tool, type ToolContext } from "../runner/index.js";
import {
  assembleLine,
  clampTerminalSize,
  type DescendantReaper,
  type LineAssembly,
  openLocalPty,
  resolveSignalName,
  type SessionRegistry,
  showLine,
} from "../sessions/index.js";
import {
  type BindContext,
  envBinding,
  physicalPath,
  sessionBinding,
  sessionOf,
  sha256,
} from "./consent-bindings.js";
import { COMMAND_TIER, CWD_PARAM, ENV_JSON_PARAM, joinProbe } from "./shell.js";
import { cwdTargets } from "./targets.js";

export interface SessionToolDeps {
  settings: Settings;
  sessions: SessionRegistry;
  /** The server's own environment: the base every overlay starts from. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  /** Catches what a terminal's processes start and detach, so it dies with the session (ADR 0019). */
  reaper?: DescendantReaper;
}

const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };
const REVERSIBLE: TierSpec = { kind: "fixed", tier: 1 };
const DEFAULT_ARGV = ["/bin/bash"];
/** Variables that would describe the server's terminal, not the session's, and lie after a resize. */
const TERMINAL_VARS = ["COLUMNS", "LINES", "TMUX", "TMUX_PANE", "STY", "WINDOW", "WINDOWID", "TERMCAP"];

/** What shell_spawn and ssh_spawn report about the session they started. */
export const SESSION_RESULT_FIELDS = {
  session_id: { type: "string", description: "id for the session_* tools" },
  recording: { type: "string", description: "path of the asciicast recording, or empty" },
};

const SESSION_ID = { type: "string", description: "the id shell_spawn (or ssh_spawn) returned" } as const;
const encoder = new TextEncoder();

/**
 * A command started on a terminal: starting a program whose later input runs
 * commands (a shell, a REPL, a database console, a debugger), or none (a
 * login shell), is at least Tier 2, since what it will run is only seen a line
 * at a time afterwards (ADR 0034). The classifier decides, on its own parse.
 */
const TERMINAL_TIER: TierSpec = { kind: "heuristic", floor: 0, windows: false, terminal: true };

/** An edited or overlong terminal line is opaque: at least Tier 2, whatever its text says. */
function lineFloor(line: LineAssembly): TierFloor | null {
  if (line.opacity === "") return null;
  const why = line.opacity === "edited" ? "line edited by control keys" : "line longer than the relay keeps";
  return { tier: 2, basis: "opaque_program", part: showLine(`${why}: ${line.text}`) };
}

/** The argv a local session starts: the command split into words like a shell would, or bash when blank. */
function argvOf(command: string): string[] {
  if (command.trim() === "") return DEFAULT_ARGV;
  const argv = splitShellWords(command);
  if (argv.length === 0) throw new RelayError("ValueError", "the command has no words (only a comment?)");
  return argv;
}

/** The line a send completes: what the terminal was given since its last Enter, and this (ADR 0034). */
function pendingLineOf(
  sessions: SessionRegistry,
  a: { session_id: string; data: string; enter: boolean },
  clientId: string,
): LineAssembly {
  return assembleLine(sessions.pendingLine(a.session_id, clientId), a.data, a.enter);
}

/**
 * Whether the line moved on since admission judged it: another send changed
 * it while this one waited for a gate, so what was judged is not what would run.
 */
function lineMoved(line: LineAssembly, judged: ToolContext["admitted"]): boolean {
  if (judged === undefined) return false;
  return line.text !== judged.policyText || (lineFloor(line)?.tier ?? 0) > judged.tier;
}

/** The most bytes one session_recv returns: 256..RELAY_SHELL_MAX_OUTPUT_HARD. */
function recvBytes(maxBytes: number, settings: Settings): number {
  return clamp(maxBytes, 256, settings.maxOutputHard);
}

export function createSessionTools(deps: SessionToolDeps): Tool[] {
  return [
    shellSpawnTool(deps),
    sessionSendTool(deps),
    sessionRecvTool(deps),
    sessionResizeTool(deps),
    sessionKillTool(deps),
    sessionListTool(deps),
  ];
}

function shellSpawnTool({ settings, sessions, baseEnv, reaper }: SessionToolDeps): Tool {
  return defineTool({
    name: "shell_spawn",
    title: "Start a local terminal session",
    description:
      "Start a persistent program on a local PTY (a real terminal) and return a session id: bash by default, " +
      "or a REPL, a TUI, anything that prompts for input or keeps running. Drive it with session_send and " +
      "session_recv; end it with session_kill. For a command that runs and exits, use shell_exec.",
    params: {
      command: {
        type: "string",
        description:
          "program and arguments, split into words like a shell would (no shell runs it); empty = /bin/bash",
        default: "",
        noNul: true,
      },
      cols: { type: "integer", description: "terminal width, clamped to 1..1000", default: 120 },
      rows: { type: "integer", description: "terminal height, clamped to 1..1000", default: 40 },
      cwd: CWD_PARAM,
      env_json: ENV_JSON_PARAM,
    },
    tier: TERMINAL_TIER,
    annotations: annotationsFor(TERMINAL_TIER, { openWorld: true }),
    resultFields: {
      ...SESSION_RESULT_FIELDS,
    },
    budget: () => 4096,
    policyText: (a) => joinProbe(a.command, a.env_json),
    // An empty command starts bash, which the policy text does not show.
    targets: (a) => [
      ...cwdTargets(a.cwd),
      ...(a.command.trim() === "" ? [{ kind: "interpreter" as const, value: DEFAULT_ARGV.join(" ") }] : []),
    ],
    auditArgs: (a) => {
      const size = clampTerminalSize(a.cols, a.rows);
      return {
        command: a.command.trim() === "" ? DEFAULT_ARGV.join(" ") : a.command,
        size: `${size.cols}x${size.rows}`,
        cwd: a.cwd,
        env_json: a.env_json,
        // The file is <dir>/<session id>.cast; the id is random, so only the directory is known before the call.
        ...(settings.sessionRecordDir !== "" ? { recording_dir: settings.sessionRecordDir } : {}),
      };
    },
    // The terminal's size at spawn only shapes the screen: left out.
    act: (a, { deps }: BindContext) => {
      const argv = argvOf(a.command);
      const command = a.command.trim() === "" ? argv.join(" ") : a.command;
      return {
        command,
        command_sha256: sha256(command),
        argv,
        ...envBinding(a.env_json),
        cwd: physicalPath(deps, a.cwd),
      };
    },
    async run(a, ctx) {
      const argv = argvOf(a.command);
      const size = clampTerminalSize(a.cols, a.rows);
      // Refuse before forking anything when every slot is taken.
      sessions.assertCapacity();
      const env = buildEnv(baseEnv, a.env_json);
      for (const name of TERMINAL_VARS) delete env[name];
      const transport = openLocalPty({ argv, cwd: a.cwd, env, cols: size.cols, rows: size.rows }, reaper);
      const title = argv.join(" ");
      const added = await sessions.add({
        kind: "local",
        title,
        owner: ctx.clientId,
        cols: size.cols,
        rows: size.rows,
        transport,
      });
      return {
        body: `session ${added.id} started (${title}); use session_recv/session_send with this id`,
        fields: { session_id: added.id, recording: added.recording },
        ...(added.recording ? { auditExtra: { recording: added.recording } } : {}),
      };
    },
  });
}

function sessionSendTool({ sessions }: SessionToolDeps): Tool {
  return defineTool({
    name: "session_send",
    title: "Type into a session",
    description:
      "Send keystrokes to a session started by shell_spawn or ssh_spawn, followed by a newline unless " +
      "enter=false (control characters such as \\u0003 for Ctrl-C pass through). Reports the bytes written; " +
      "read the effect with session_recv. What is judged is the line the terminal will run: the text sent " +
      "since the last Enter plus this one, classified like a command; control keys that can edit a line make " +
      "it opaque (at least Tier 2) until the next Enter.",
    params: {
      session_id: SESSION_ID,
      data: { type: "string", description: "text to type" },
      enter: { type: "boolean", description: "append a newline", default: true },
    },
    tier: COMMAND_TIER,
    annotations: annotationsFor(COMMAND_TIER, { openWorld: true }),
    resultFields: { bytes: { type: "integer", description: "UTF-8 bytes written, newline included" } },
    budget: () => 2048,
    policyText: (a, scope) => pendingLineOf(sessions, a, scope.clientId).text,
    tierFloor: (a, scope) => lineFloor(pendingLineOf(sessions, a, scope.clientId)),
    auditArgs: (a, scope) => {
      // The line as the terminal gets it, when it is more than this piece.
      const line = pendingLineOf(sessions, a, scope.clientId).raw;
      return { session_id: a.session_id, data: a.data, enter: a.enter, ...(line !== a.data ? { line } : {}) };
    },
    act: (a, ctx: BindContext) => ({
      ...sessionBinding(sessionOf(ctx, a.session_id, true)),
      text: a.data,
      text_sha256: sha256(a.data),
      // Whether the line is entered: the same text without it runs nothing yet.
      enter: a.enter,
    }),
    async run(a, ctx) {
      const line = pendingLineOf(sessions, a, ctx.clientId);
      if (lineMoved(line, ctx.admitted)) {
        throw new RelayError(
          "SessionError",
          `the line pending on ${a.session_id} changed while this send waited; nothing was sent`,
        );
      }
      const bytes = encoder.encode(a.enter ? `${a.data}\n` : a.data);
      const written = sessions.send(a.session_id, ctx.clientId, bytes, line.rest);
      return { body: `sent ${written} bytes to ${a.session_id}`, fields: { bytes: written } };
    },
  });
}

function sessionRecvTool({ settings, sessions }: SessionToolDeps): Tool {
  return defineTool({
    name: "session_recv",
    title: "Read a session's output",
    description:
      "Return what a session's terminal printed since the last read, waiting up to `timeout` seconds for " +
      "output when none is buffered. An empty result means nothing new yet; a session that ended says " +
      "`[session <id> ended, exit=N]` once its output has been read.",
    params: {
      session_id: SESSION_ID,
      timeout: { type: "number", description: "seconds to wait for output, 0..60", default: 2.0 },
      max_bytes: {
        type: "integer",
        description: "most bytes returned, 256..RELAY_SHELL_MAX_OUTPUT_HARD; the rest stays buffered",
        default: 65536,
      },
    },
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false, idempotent: false }),
    resultFields: {
      ended: { type: "boolean", description: "the session has ended and all its output was read" },
      session_exit_code: { type: ["integer", "null"], description: "exit status once the session has ended" },
      bytes: { type: "integer", description: "terminal bytes this read consumed" },
    },
    budget: (a) => recvBytes(a.max_bytes, settings),
    policyText: () => "",
    auditArgs: (a) => ({ session_id: a.session_id, timeout: a.timeout }),
    async run(a, ctx) {
      const result = await sessions.recv(a.session_id, ctx.clientId, {
        timeoutMs: clamp(a.timeout, 0, 60) * 1000,
        maxBytes: recvBytes(a.max_bytes, settings),
        signal: ctx.signal,
      });
      return {
        body: result.text,
        fields: { ended: result.ended, session_exit_code: result.exitCode, bytes: result.bytes },
      };
    },
  });
}

function sessionResizeTool({ sessions }: SessionToolDeps): Tool {
  return defineTool({
    name: "session_resize",
    title: "Resize a session's terminal",
    description:
      "Change the size of a session's terminal (the program gets SIGWINCH). Sides are clamped to 1..1000; " +
      "the reply states the size applied.",
    params: {
      session_id: SESSION_ID,
      cols: { type: "integer", description: "width in columns" },
      rows: { type: "integer", description: "height in rows" },
    },
    tier: REVERSIBLE,
    annotations: annotationsFor(REVERSIBLE, { openWorld: false, idempotent: true }),
    budget: () => 512,
    policyText: () => "",
    auditArgs: (a) => ({ session_id: a.session_id, cols: a.cols, rows: a.rows }),
    act: (a, ctx: BindContext) => {
      const size = clampTerminalSize(a.cols, a.rows);
      return { ...sessionBinding(sessionOf(ctx, a.session_id, true)), cols: size.cols, rows: size.rows };
    },
    async run(a, ctx) {
      const size = sessions.resize(a.session_id, ctx.clientId, a.cols, a.rows);
      return { body: `resized ${a.session_id} to ${size.cols}x${size.rows}` };
    },
  });
}

function sessionKillTool({ sessions }: SessionToolDeps): Tool {
  return defineTool({
    name: "session_kill",
    title: "Signal or close a session",
    description:
      "Send a signal to a session (TERM by default; INT, HUP, KILL, ... with or without SIG) and, unless " +
      "close=false, end it: everything it started is killed and the id is released. The reply names the " +
      "signal actually sent; an unknown name sends TERM.",
    params: {
      session_id: SESSION_ID,
      signal_name: { type: "string", description: "signal name, e.g. INT, TERM, KILL", default: "TERM" },
      close: { type: "boolean", description: "also tear the session down and release its id", default: true },
    },
    tier: REVERSIBLE,
    annotations: annotationsFor(REVERSIBLE, { openWorld: false }),
    resultFields: { signal: { type: "string", description: "the signal actually sent, e.g. SIGTERM" } },
    budget: () => 512,
    policyText: () => "",
    auditArgs: (a) => ({ session_id: a.session_id, signal_name: a.signal_name, close: a.close }),
    act: (a, ctx: BindContext) => ({
      ...sessionBinding(sessionOf(ctx, a.session_id, false)),
      // The signal that will really be sent: `int`, `SIGINT` and `2` are one act.
      signal: resolveSignalName(a.signal_name),
      close: a.close,
    }),
    async run(a, ctx) {
      const result = await sessions.kill(a.session_id, ctx.clientId, a.signal_name, a.close);
      const body = result.closed
        ? `killed and closed ${a.session_id}`
        : `sent ${result.signal} to ${a.session_id}`;
      return { body, fields: { signal: result.signal } };
    },
  });
}

function sessionListTool({ sessions }: SessionToolDeps): Tool {
  return defineTool({
    name: "session_list",
    title: "List sessions",
    description:
      "List the caller's sessions (and sessions no client owns) as JSON: id, kind, command, size, age, idle " +
      "time, buffered/produced/dropped output bytes, input bytes, whether it ended, exit code, owner and " +
      "recording path. Listing first removes expired sessions. Where several relays share one state, the " +
      "caller's terminals on other relays follow, each with the relay that holds it (held_by) and whether " +
      "that relay is up (relay_up); they are used through the MCP session that started them.",
    params: {},
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false, idempotent: false }),
    budget: () => 65536,
    policyText: () => "",
    auditArgs: () => ({}),
    async run(_a, ctx) {
      const rows: object[] = sessions.list(ctx.clientId);
      const now = Date.now();
      for (const remote of await sessions.elsewhere(ctx.clientId)) {
        rows.push({
          id: remote.id,
          kind: remote.kind,
          title: remote.title,
          age_s: Math.max(0, Math.round((now - remote.startedAt) / 100) / 10),
          held_by: remote.instance,
          relay_up: remote.relayUp,
        });
      }
      return { body: rows.length === 0 ? "[]" : JSON.stringify(rows, null, 2) };
    },
  });
}
