import { closeSync, fchmodSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../core/index.js";
import { Utf8StreamDecoder } from "./utf8-stream.js";

export interface RecordingRequest {
  dir: string;
  id: string;
  cols: number;
  rows: number;
  /** What runs, for the header's `command`. */
  command: string;
  /** Record keystrokes as "i" events. Off by default: keystrokes can be passwords. */
  recordInput: boolean;
  clock: Clock;
}

/**
 * An asciicast v2 file (one JSON header line, then one `[seconds, code, data]`
 * line per event). Each event is written as it happens, so a recording is
 * readable, and useful after a crash, up to its last event.
 */
export interface Recording {
  readonly path: string;
  output(chunk: Uint8Array): void;
  input(chunk: Uint8Array): void;
  resize(cols: number, rows: number): void;
  close(): void;
  /** Why recording stopped early (a write failed), or "". */
  readonly error: string;
}

/** File name of a session's recording: the session id, so any audit record's session_id leads to it. */
function recordingPath(dir: string, id: string): string {
  return join(dir, `${id}.cast`);
}

/** Open the recording file (0600, never over an existing file) and write its header. Throws when it cannot. */
export function openRecording(request: RecordingRequest): Recording {
  const { clock } = request;
  mkdirSync(request.dir, { recursive: true, mode: 0o700 });
  const path = recordingPath(request.dir, request.id);
  let fd: number | null = openSync(path, "wx", 0o600);
  try {
    // The umask can only narrow the mode, but a directory ACL could widen it: state it explicitly.
    fchmodSync(fd, 0o600);
    const header = {
      version: 2,
      width: request.cols,
      height: request.rows,
      timestamp: Math.floor(clock.now() / 1000),
      command: request.command,
      env: { TERM: "xterm-256color" },
    };
    writeSync(fd, `${JSON.stringify(header)}\n`);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  const started = clock.monotonic();
  const outText = new Utf8StreamDecoder();
  const inText = new Utf8StreamDecoder();
  let error = "";

  const event = (code: "o" | "i" | "r", data: string): void => {
    if (fd === null || data === "") return;
    const seconds = Math.round((clock.monotonic() - started) * 1000) / 1e6;
    try {
      writeSync(fd, `${JSON.stringify([seconds, code, data])}\n`);
    } catch (err) {
      // A full disk must not take the session down with it: stop recording and say so in session_list.
      error = err instanceof Error ? err.message : String(err);
      shut();
    }
  };
  const shut = (): void => {
    if (fd === null) return;
    const last = fd;
    fd = null;
    try {
      closeSync(last);
    } catch {
      // Closing can only fail for a descriptor that is already invalid; there is nothing left to release.
    }
  };

  return {
    path,
    get error() {
      return error;
    },
    output: (chunk) => event("o", outText.decode(chunk)),
    input: (chunk) => {
      if (request.recordInput) event("i", inText.decode(chunk));
    },
    resize: (cols, rows) => event("r", `${cols}x${rows}`),
    close() {
      event("o", outText.flush());
      if (request.recordInput) event("i", inText.flush());
      shut();
    },
  };
}
