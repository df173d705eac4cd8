import { MAX_OUTPUT_BYTES, type StageTimes } from "../core/index.js";
import type { ProcessOutcome } from "./types.js";

/*
 * Reading the native launcher's replies (ADR 0031): frames split from its stdout, each decoded
 * with every length and offset checked, so a short, long or garbled reply is an answer of kind
 * "bad", never a throw inside a stream listener.
 */

const REPLY_READY = 0x59; // Y
const REPLY_DONE = 0x44; // D
const REPLY_FAILED = 0x46; // F
const UTF8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** A 'D' reply without its kept output: the fields and the two lengths. */
const DONE_FIXED = 54;
/**
 * No reply of the launcher is longer, since it keeps at most MAX_OUTPUT_BYTES of a command
 * whatever a run asks for (MAX_BUDGET in native/launcher.h); a longer length means the stream is
 * out of step.
 */
export const MAX_REPLY_BYTES = DONE_FIXED + MAX_OUTPUT_BYTES;

/** A reply frame decoded, or why it is not one. */
export type Reply =
  | { kind: "ready" }
  | { kind: "done"; id: number; outcome: ProcessOutcome; stages?: StageTimes }
  | { kind: "failed"; id: number; errno: number }
  | { kind: "bad"; why: string };

/**
 * Splits the launcher's stdout into frame payloads. A frame arriving in many chunks is joined once,
 * when it is whole; a length beyond MAX_REPLY_BYTES is an error, after which nothing more is read.
 */
export function replyFrames(): (chunk: Buffer) => { frames: Buffer[]; error?: string } {
  let chunks: Buffer[] = [];
  let size = 0;
  /** The payload length of the frame begun, once its length is in; -1 before. */
  let need = -1;
  return (chunk) => {
    chunks.push(chunk);
    size += chunk.length;
    const frames: Buffer[] = [];
    for (;;) {
      if (need < 0) {
        if (size < 4) break;
        if ((chunks[0]?.length ?? 0) < 4) chunks = [Buffer.concat(chunks, size)];
        need = (chunks[0] as Buffer).readUInt32LE(0);
        if (need > MAX_REPLY_BYTES) {
          return { frames, error: `a reply of ${need} bytes, more than any reply (${MAX_REPLY_BYTES})` };
        }
      }
      if (size - 4 < need) break;
      const all = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      frames.push(all.subarray(4, 4 + need));
      const rest = all.subarray(4 + need);
      chunks = rest.length > 0 ? [rest] : [];
      size = rest.length;
      need = -1;
    }
    return { frames };
  };
}

/** One reply payload, every length and offset checked against the frame: it never throws. */
export function decodeReply(frame: Buffer): Reply {
  const bad = (why: string): Reply => ({ kind: "bad", why: `${why}, in a frame of ${frame.length} bytes` });
  switch (frame[0]) {
    case undefined:
      return bad("an empty reply");
    case REPLY_READY:
      return frame.length === 1 ? { kind: "ready" } : bad("a ready reply of the wrong length");
    case REPLY_FAILED:
      return frame.length === 9
        ? { kind: "failed", id: frame.readUInt32LE(1), errno: frame.readUInt32LE(5) }
        : bad("a failed reply of the wrong length");
    case REPLY_DONE: {
      const done = decodeDone(frame);
      return typeof done === "string" ? bad(`a done reply with ${done}`) : done;
    }
    default:
      return bad(`a reply of unknown kind ${frame[0]}`);
  }
}

/**
 * A 'D' reply: kind, id u32, exit code i32, flags u8 (1 no exit code, 2 timed out, 4 traced),
 * total u64, dropped u64, stopped u32, spawn µs f64, drain µs f64, then the kept stdout and the
 * kept stderr, each as u32 length and bytes. The kept bytes are what was not dropped, and the
 * frame ends where the stderr does. What is wrong with it, or the reply.
 */
function decodeDone(frame: Buffer): Extract<Reply, { kind: "done" }> | string {
  if (frame.length < DONE_FIXED) return "too few bytes";
  const id = frame.readUInt32LE(1);
  const code = frame.readInt32LE(5);
  const flags = frame.readUInt8(9);
  if ((flags & ~7) !== 0) return `unknown flags ${flags}`;
  if (!(flags & 1) && (code < -127 || code > 255)) return `exit code ${code}`;
  const total = frame.readBigUInt64LE(10);
  const dropped = frame.readBigUInt64LE(18);
  const stopped = frame.readUInt32LE(26);
  const spawnUs = frame.readDoubleLE(30);
  const drainUs = frame.readDoubleLE(38);
  if (flags & 4 && !(Number.isFinite(spawnUs) && Number.isFinite(drainUs))) return "stage times not finite";
  const outLength = frame.readUInt32LE(46);
  if (outLength > frame.length - DONE_FIXED) return `a stdout of ${outLength} bytes`;
  const errAt = 50 + outLength;
  const errLength = frame.readUInt32LE(errAt);
  if (errLength !== frame.length - DONE_FIXED - outLength) return `a stderr of ${errLength} bytes`;
  if (total > BigInt(Number.MAX_SAFE_INTEGER) || dropped > total)
    return `${dropped} of ${total} bytes dropped`;
  if (total - dropped !== BigInt(outLength + errLength)) return "kept bytes that do not add up";
  const out = frame.subarray(50, errAt);
  const err = frame.subarray(errAt + 4);
  const outcome: ProcessOutcome = {
    exitCode: flags & 1 ? null : code,
    timedOut: (flags & 2) !== 0,
    // Each stream decoded on its own, so a character is never made of both.
    output: UTF8.decode(out) + (errLength > 0 ? UTF8.decode(err) : ""),
    totalBytes: Number(total),
    droppedBytes: Number(dropped),
    durationMs: 0,
    ...(stopped > 0 ? { stoppedProcesses: stopped } : {}),
  };
  return flags & 4
    ? { kind: "done", id, outcome, stages: { spawn: spawnUs, drain: drainUs } }
    : { kind: "done", id, outcome };
}
