import type { Client, SFTPWrapper } from "ssh2";
import { type Clock, RelayError } from "../core/index.js";
import { untilAborted } from "./abortable.js";
import { CONNECTION_UNUSABLE, isConnectionUnusable } from "./errors.js";
import type { HostKeyReport } from "./host-key.js";
import type { SshLease, SshPool } from "./pool.js";
import { type CopyStats, emptyStats, uploadTree } from "./sftp.js";
import { downloadTree } from "./sftp-download.js";
import { createRemoteFs } from "./sftp-fs.js";
import { dropSpare } from "./spare-session.js";
import type { SshTarget } from "./target.js";
import { createTransferMeter, type TransferLimits } from "./transfer-limits.js";

export type TransferDirection = "upload" | "download";

export interface TransferRequest {
  direction: TransferDirection;
  target: SshTarget;
  /** The host as the caller named it, for messages. */
  host: string;
  localPath: string;
  remotePath: string;
  recursive: boolean;
  /** Wall-clock bound of the whole transfer, connecting included (the caller's, or the server's cap). */
  timeoutMs: number;
  /** Bytes and entries; crossing one stops the transfer with a TransferLimitError. */
  limits: TransferLimits;
  signal?: AbortSignal;
}

export interface TransferResult extends CopyStats {
  timedOut: boolean;
  /** null when the time ran out before the connection was up. */
  hostKey: HostKeyReport | null;
  jumpHostKeys: readonly HostKeyReport[];
  reused: boolean;
  durationMs: number;
}

export interface TransferDeps {
  pool: SshPool;
  clock: Clock;
}

function openSftp(client: Client): Promise<SFTPWrapper> {
  return new Promise((resolve, reject) => {
    const fail = (err: unknown) =>
      reject(
        new RelayError(
          "ChannelOpenError",
          `could not start SFTP: ${(err as Error)?.message ?? String(err)}`,
          {
            code: CONNECTION_UNUSABLE,
            cause: err,
          },
        ),
      );
    try {
      client.sftp((err, sftp) => (err ? fail(err) : resolve(sftp)));
    } catch (err) {
      // ssh2 throws synchronously when the connection is already gone.
      fail(err);
    }
  });
}

const STOPPED = "the transfer was stopped";

/** Longest error message a transfer returns: the tools' output budget is 2048 bytes, brackets included. */
const MAX_ERROR_MESSAGE_BYTES = 1536;

/**
 * The error a failed transfer answers with: says how far the copy got when
 * it got anywhere (the result fields are not sent with an error), and never
 * longer than MAX_ERROR_MESSAGE_BYTES.
 */
function boundedError(err: unknown, stats: CopyStats): unknown {
  if (!(err instanceof RelayError)) return err;
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const progress =
    stats.files + stats.directories + stats.symlinks > 0
      ? `; copied so far: ${count(stats.files, "file", "files")} (${count(stats.bytes, "byte", "bytes")}), ` +
        `${count(stats.directories, "directory", "directories")}, ${count(stats.symlinks, "symlink", "symlinks")}`
      : "";
  let message = err.message;
  const room = MAX_ERROR_MESSAGE_BYTES - Buffer.byteLength(progress, "utf8");
  if (Buffer.byteLength(message, "utf8") > room) {
    const cut = Buffer.from(message, "utf8")
      .subarray(0, room - 40)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    message = `${cut}… (${Buffer.byteLength(message, "utf8")} bytes)`;
  }
  if (progress === "" && message === err.message) return err;
  return new RelayError(err.type, `${message}${progress}`, { code: err.code, cause: err });
}

/**
 * One SFTP transfer on a pooled connection, pinned for its whole length.
 * The timeout covers connecting as well; when it fires the SFTP channel is
 * closed, the partial file stays where it is, and the result says how far
 * the copy got.
 */
export async function transferFiles(deps: TransferDeps, request: TransferRequest): Promise<TransferResult> {
  const { pool, clock } = deps;
  const started = clock.monotonic();
  const stop = new AbortController();
  const stats = emptyStats(request.direction === "upload" ? request.remotePath : request.localPath);
  let timedOut = false;
  // Set inside the pool's open callback, which the compiler cannot follow.
  let lease = null as SshLease | null;
  let sftp: SFTPWrapper | null = null;
  const halt = () => {
    stop.abort();
    // Pending SFTP requests fail once the channel is gone, which ends the copy under way.
    sftp?.end();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    halt();
  }, request.timeoutMs);
  request.signal?.addEventListener("abort", halt, { once: true });
  if (request.signal?.aborted) halt();

  const result = (): TransferResult => ({
    ...stats,
    timedOut,
    hostKey: lease?.hostKey ?? null,
    jumpHostKeys: lease?.jumpHostKeys ?? [],
    reused: lease?.reused ?? false,
    durationMs: clock.monotonic() - started,
  });

  try {
    // A pooled connection that died between uses is replaced once, by the pool.
    const { value: channel } = await pool.open(request.target, { signal: stop.signal }, async (opened) => {
      // Known as soon as it is leased: a transfer that times out while opening still reports the host key.
      lease = opened;
      // SFTP is a session of its own: the connection's spare gives its slot back first.
      const opening = dropSpare(opened.client).then(() => openSftp(opened.client));
      // A channel that opens after the time ran out is closed at once.
      opening.then(
        (late) => {
          if (stop.signal.aborted && late !== sftp) late.end();
        },
        () => undefined,
      );
      try {
        return await untilAborted(opening, stop.signal, STOPPED);
      } catch (err) {
        // This connection is being replaced: it has nothing to report.
        if (isConnectionUnusable(err)) lease = null;
        throw err;
      }
    });
    sftp = channel;
    const remote = createRemoteFs(channel, request.host);
    const options = {
      recursive: request.recursive,
      host: request.host,
      signal: stop.signal,
      stats,
      meter: createTransferMeter(request.limits),
    };
    const work =
      request.direction === "upload"
        ? uploadTree(remote, request.localPath, request.remotePath, options)
        : downloadTree(remote, request.remotePath, request.localPath, options);
    // Once the race is lost to a timeout, the work's own failure is no longer news.
    work.catch(() => undefined);
    await untilAborted(work, stop.signal, STOPPED);
    return result();
  } catch (err) {
    if (timedOut) return result();
    throw boundedError(err, stats);
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", halt);
    sftp?.end();
    lease?.release();
  }
}
