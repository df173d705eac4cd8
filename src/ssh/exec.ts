import { constants as osConstants } from "node:os";
import type { Client, ClientChannel } from "ssh2";
import { type Clock, decodeUtf8, markStage, RelayError, type RunOutcome } from "../core/index.js";
import { CONNECTION_UNUSABLE } from "./errors.js";
import { execOnConnection } from "./spare-session.js";

export interface RemoteExecRequest {
  /** Sent verbatim as the exec request: the remote login shell interprets it. */
  command: string;
  /** Time left for the channel: opening, running and draining. */
  timeoutMs: number;
  /** Bytes kept across stdout and stderr together; the rest is read and counted. */
  maxBufferBytes: number;
  signal?: AbortSignal;
  /** How long a timed-out channel may take to close after the kill (default 2000). */
  killGraceMs?: number;
  /** How long to wait for the close after EOF of both streams (default 5000). */
  closeWaitMs?: number;
}

/**
 * The outcome of a command on a host: what any command leaves (RunOutcome; its output is stdout
 * and stderr in arrival order), and the name of the signal the remote process died of, if any.
 */
export interface RemoteOutcome extends RunOutcome {
  exitSignal: string | null;
}

function signalNumber(name: string): number | null {
  const key = `SIG${name.replace(/^SIG/, "")}` as keyof typeof osConstants.signals;
  const value = osConstants.signals[key];
  return typeof value === "number" ? value : null;
}

/**
 * Start the command on a session channel (the connection's spare when it
 * has one) and hand the channel over synchronously: ssh2 emits `exit` as soon
 * as the packet is parsed, often in the same read as the request's reply, so
 * a listener attached one microtask later would miss it.
 */
function openChannel(
  client: Client,
  command: string,
  attach: (channel: ClientChannel) => void,
): Promise<void> {
  return execOnConnection(client, command, attach).catch((err: unknown) => {
    // ssh2 throws or fails the open when the connection is already gone.
    throw new RelayError(
      "ChannelOpenError",
      `could not start the command: ${(err as Error)?.message ?? String(err)}`,
      {
        code: CONNECTION_UNUSABLE,
        cause: err,
      },
    );
  });
}

/**
 * Run one command on an established connection. Output from both streams
 * lands in one buffer in the order it arrives, under one byte budget; on
 * timeout the remote process is signalled and the channel closed.
 */
export async function execRemote(
  client: Client,
  request: RemoteExecRequest,
  clock: Clock,
): Promise<RemoteOutcome> {
  const started = clock.monotonic();
  markStage("connect");
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;

  const take = (chunk: Buffer) => {
    total += chunk.length;
    const room = request.maxBufferBytes - kept;
    if (room <= 0) return;
    const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
    chunks.push(piece);
    kept += piece.length;
  };

  let channel: ClientChannel | null = null;
  const outcome = await new Promise<{ timedOut: boolean; code: number | null; signal: string | null }>(
    (resolve, reject) => {
      let done = false;
      let code: number | null = null;
      let exitSignal: string | null = null;
      let eofs = 0;
      let closeTimer: NodeJS.Timeout | null = null;
      // Set when the timeout or a cancel ends the run: what the close then reports.
      let ending: { timedOut: boolean; err?: unknown } | null = null;
      const finish = (timedOut: boolean, err?: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (closeTimer) clearTimeout(closeTimer);
        request.signal?.removeEventListener("abort", onAbort);
        if (err !== undefined) reject(err);
        else resolve({ timedOut, code, signal: exitSignal });
      };
      const stop = (then: () => void) => {
        const ch = channel;
        if (!ch) {
          then();
          return;
        }
        try {
          ch.signal("KILL");
        } catch {
          // The channel may already be closing; close() below still ends it.
        }
        const grace = setTimeout(then, request.killGraceMs ?? 2000);
        ch.once("close", () => {
          clearTimeout(grace);
          then();
        });
        ch.close();
      };
      const timer = setTimeout(
        () => {
          ending = { timedOut: true };
          stop(() => finish(true));
        },
        Math.max(0, request.timeoutMs),
      );
      const onAbort = () => {
        const err = new RelayError("CancelledError", "the call was cancelled");
        ending = { timedOut: false, err };
        stop(() => finish(false, err));
      };
      if (request.signal?.aborted) {
        onAbort();
        return;
      }
      request.signal?.addEventListener("abort", onAbort, { once: true });

      openChannel(client, request.command, (ch) => {
        channel = ch;
        if (done) {
          ch.close();
          return;
        }
        const onEof = () => {
          eofs++;
          // Some servers never send the close after EOF: do not hang on it.
          if (eofs === 2 && !closeTimer)
            closeTimer = setTimeout(() => finish(false), request.closeWaitMs ?? 5000);
        };
        ch.on("data", take);
        ch.stderr.on("data", take);
        ch.on("end", onEof);
        ch.stderr.on("end", onEof);
        ch.on("exit", (exitCode: number | null, signalName?: string) => {
          if (typeof exitCode === "number") code = exitCode;
          else if (signalName) {
            exitSignal = signalName;
            const n = signalNumber(signalName);
            code = n === null ? null : -n;
          }
        });
        const onError = (err: Error) =>
          finish(
            false,
            new RelayError("ChannelError", `the command channel failed: ${err.message}`, { cause: err }),
          );
        ch.on("error", onError);
        ch.stderr.on("error", onError);
        ch.on("close", () => finish(ending?.timedOut ?? false, ending?.err));
      })
        // Marked from the promise, not ssh2's callback, which runs outside the call's async context.
        .then(() => markStage("channel_open"))
        .catch((err: unknown) => finish(false, err));
    },
  );
  markStage("remote_run");

  const buffer = Buffer.concat(chunks, kept);
  return {
    exitCode: outcome.timedOut ? null : outcome.code,
    exitSignal: outcome.signal,
    timedOut: outcome.timedOut,
    output: decodeUtf8(buffer),
    totalBytes: total,
    droppedBytes: total - kept,
    durationMs: clock.monotonic() - started,
  };
}
