import { constants as osConstants } from "node:os";
import type { Client, ClientChannel, PseudoTtyOptions } from "ssh2";
import { holdTerminalEvents, RelayError, type TerminalEvents } from "../core/index.js";
import { CONNECTION_UNUSABLE } from "./errors.js";
import type { HostKeyReport } from "./host-key.js";
import type { SshLease, SshPool } from "./pool.js";
import { dropSpare } from "./spare-session.js";
import type { SshTarget } from "./target.js";

/** What the session registry hears from a terminal. */
type PtyEvents = TerminalEvents;

/**
 * A remote terminal, shaped as the session registry's transport so `ssh`
 * sessions live in the one registry and are driven by the session tools.
 * (The ssh layer does not import sessions/; the shapes meet in tools/.)
 */
interface SshPtyTransport {
  readonly kind: "ssh";
  start(events: PtyEvents): void;
  write(data: Uint8Array): void;
  resize(cols: number, rows: number): void;
  signal(name: string): string;
  close(): Promise<void>;
  destroy(): void;
}

export interface SshPtyRequest {
  /** "" = the login shell. */
  command: string;
  cols: number;
  rows: number;
  /** How long the server may take to open the channel and grant the terminal. */
  openTimeoutMs: number;
  signal?: AbortSignal;
  /** How long close() waits for the channel to go (default 5000 ms). */
  closeWaitMs?: number;
}

export interface OpenedSshPty {
  transport: SshPtyTransport;
  hostKey: HostKeyReport;
  jumpHostKeys: readonly HostKeyReport[];
  reused: boolean;
}

const TERMINAL_TYPE = "xterm-256color";
/** The signals the SSH `signal` request is sent for (docs/wire-contract.md §10.3); any other becomes TERM. */
const SSH_SIGNALS = new Set(["INT", "KILL", "TERM", "HUP", "QUIT"]);
const DEFAULT_CLOSE_WAIT_MS = 5000;

/** ssh2 reports the signal as `SIGTERM`; the SSH protocol itself says `TERM`: accept both. */
function signalNumber(name: string): number | null {
  const value = (osConstants.signals as Record<string, number | undefined>)[`SIG${name.replace(/^SIG/, "")}`];
  return typeof value === "number" ? value : null;
}

function openChannel(client: Client, request: SshPtyRequest): Promise<ClientChannel> {
  const window: PseudoTtyOptions = { term: TERMINAL_TYPE, cols: request.cols, rows: request.rows };
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
      reject(
        err instanceof RelayError
          ? err
          : new RelayError(
              "ChannelOpenError",
              `could not open the terminal: ${(err as Error)?.message ?? String(err)}`,
              {
                code: CONNECTION_UNUSABLE,
                cause: err,
              },
            ),
      );
    };
    const timer = setTimeout(
      () =>
        fail(
          new RelayError("TimeoutError", `the terminal did not open within ${request.openTimeoutMs / 1000}s`),
        ),
      request.openTimeoutMs,
    );
    const onAbort = () => fail(new RelayError("CancelledError", "the call was cancelled"));
    request.signal?.addEventListener("abort", onAbort, { once: true });
    const done = (err: Error | undefined, channel: ClientChannel) => {
      if (err) {
        fail(err);
        return;
      }
      if (settled) {
        // Too late: the caller was already told it failed.
        channel.close();
        return;
      }
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
      resolve(channel);
    };
    try {
      if (request.command === "") client.shell(window, done);
      else client.exec(request.command, { pty: window }, done);
    } catch (err) {
      // ssh2 throws synchronously when the connection is already gone.
      fail(err);
    }
  });
}

/**
 * Wrap an open PTY channel. The lease pins the connection until the
 * terminal is gone: released when the channel closes, on close() and on
 * destroy(), whichever comes first, even if closing fails.
 */
function wrapChannel(channel: ClientChannel, lease: SshLease, closeWaitMs: number): SshPtyTransport {
  const events = holdTerminalEvents(false);
  let exitCode: number | null = null;
  let closed = false;
  let closing: Promise<void> | null = null;
  const closeWaiters = new Set<() => void>();

  const onData = (chunk: Buffer) => events.data(chunk);
  channel.on("data", onData);
  channel.stderr.on("data", onData);
  channel.on("exit", (code: number | null, signalName?: string) => {
    if (typeof code === "number") exitCode = code;
    else if (signalName) {
      const n = signalNumber(signalName);
      exitCode = n === null ? null : -n;
    }
  });
  // Errors end the channel; the close below reports the end.
  channel.on("error", () => undefined);
  channel.stderr.on("error", () => undefined);
  channel.on("close", () => {
    if (closed) return;
    closed = true;
    lease.release();
    for (const wake of closeWaiters) wake();
    closeWaiters.clear();
    // Exit comes after the output: ssh2 has emitted every data event by now.
    events.exit(exitCode);
  });

  const send = (name: string): void => {
    try {
      channel.signal(name);
    } catch {
      // Some servers (older Windows OpenSSH) do not take signals: ending the channel is what is left.
      channel.close();
    }
  };

  return {
    kind: "ssh",
    start(handlers) {
      events.start(handlers);
    },
    write(data) {
      if (closed) return;
      try {
        channel.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      } catch {
        // The channel went away between the check and the write: the close event reports it.
      }
    },
    resize(cols, rows) {
      if (!closed) channel.setWindow(rows, cols, 0, 0);
    },
    signal(name) {
      const sent = SSH_SIGNALS.has(name) ? name : "TERM";
      if (!closed) send(sent);
      return sent;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (closed) {
          resolve();
          return;
        }
        const finish = () => {
          clearTimeout(timer);
          closeWaiters.delete(finish);
          // However the wait ended, the connection is no longer pinned by this terminal.
          lease.release();
          resolve();
        };
        const timer = setTimeout(finish, closeWaitMs);
        closeWaiters.add(finish);
        // A closing terminal hangs up: HUP ends an interactive shell that would ignore TERM.
        send("HUP");
        channel.close();
      });
      return closing;
    },
    destroy() {
      events.stop();
      try {
        channel.close();
      } finally {
        lease.release();
      }
    },
  };
}

/**
 * Acquire a pooled connection to `target` and open a terminal on it (a
 * reused connection that died between uses is replaced once, by the pool).
 */
export async function openSshPty(
  pool: SshPool,
  target: SshTarget,
  request: SshPtyRequest,
): Promise<OpenedSshPty> {
  const { lease, value: channel } = await pool.open(
    target,
    request.signal ? { signal: request.signal } : {},
    // A terminal is a session of its own: the connection's spare gives its slot back first.
    (opened) => dropSpare(opened.client).then(() => openChannel(opened.client, request)),
  );
  return {
    transport: wrapChannel(channel, lease, request.closeWaitMs ?? DEFAULT_CLOSE_WAIT_MS),
    hostKey: lease.hostKey,
    jumpHostKeys: lease.jumpHostKeys,
    reused: lease.reused,
  };
}
