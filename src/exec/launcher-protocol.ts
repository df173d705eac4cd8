import { isErrorType, MAX_OUTPUT_BYTES, RelayError, type StageTimes } from "../core/index.js";
import type { ProcessOutcome, ProcessRequest } from "./types.js";

/**
 * The messages between the server and its process launcher. They travel over
 * the IPC channel of child_process.fork with V8 ("advanced") serialization, so
 * Buffers, Infinity and undefined arrive as they were sent.
 */

/** A ProcessRequest with its stdin as bytes: a large input crosses as one Buffer, not escaped text. */
export interface WireRequest extends Omit<ProcessRequest, "stdin"> {
  stdin?: Buffer;
}

/** What is left of a thrown value after the hop: enough to rebuild the same RelayError. */
export interface WireError {
  relay: boolean;
  name: string;
  type: string;
  message: string;
  /** RelayError.code, or the errno code of a plain error. */
  code: string | undefined;
  cause: { name: string; message: string; code: string | undefined } | undefined;
}

export type ToLauncher =
  /** aborted: the caller's signal had fired before run() was called. */
  | { kind: "run"; id: number; request: WireRequest; aborted: boolean; trace?: true }
  | { kind: "abort"; id: number }
  | { kind: "killAll" }
  /** Kill every child, answer what is still open, then exit. */
  | { kind: "close" };

/** What the runner hands a launcher link: a run carries the request as the caller made it. */
export type LinkMessage =
  | { kind: "run"; id: number; request: ProcessRequest; aborted: boolean; trace?: true }
  | Exclude<ToLauncher, { kind: "run" }>;

export type FromLauncher =
  /** The launcher listens: messages sent before this could be dropped while its modules load. */
  | { kind: "ready" }
  /** stages: the launcher's share of a traced request (docs/performance.md). */
  | { kind: "done"; id: number; outcome: ProcessOutcome; stages?: StageTimes }
  | { kind: "failed"; id: number; error: WireError }
  /** The Node launcher could not read a message of ours: it stops what it runs and exits. */
  | { kind: "broken"; why: string };

export function toWireRequest(request: ProcessRequest): WireRequest {
  const { stdin, ...rest } = request;
  // Text becomes bytes here exactly as planSpawn would encode it (lone surrogates as U+FFFD), so
  // decoding on the other side and encoding again yields the same bytes.
  return stdin === undefined ? rest : { ...rest, stdin: Buffer.from(stdin, "utf8") };
}

export function fromWireRequest(wire: WireRequest): ProcessRequest {
  const { stdin, env, ...rest } = wire;
  // The environment arrives as a plain object; put it back on a null prototype as buildEnv made
  // it, so a variable named like an Object.prototype member stays just a variable.
  const request = { ...rest, env: Object.assign(Object.create(null) as Record<string, string>, env) };
  return stdin === undefined ? request : { ...request, stdin: stdin.toString("utf8") };
}

export function toWireError(err: unknown): WireError {
  if (err instanceof RelayError) {
    return {
      relay: true,
      name: err.name,
      type: err.type,
      message: err.message,
      code: err.code,
      cause: describeCause(err.cause),
    };
  }
  const plain = err instanceof Error ? err : new Error(String(err));
  return {
    relay: false,
    name: plain.name,
    type: plain.name,
    message: plain.message,
    code: errnoCode(plain),
    cause: describeCause(plain.cause),
  };
}

/** Rebuild the error the launcher's runner threw: a RelayError keeps its type, message and code. */
export function fromWireError(wire: WireError): Error {
  const cause = wire.cause === undefined ? undefined : plainError(wire.cause);
  // The decoder refuses a relay error whose token is not in the closed list; this is the type's proof.
  if (wire.relay && isErrorType(wire.type)) {
    return new RelayError(wire.type, wire.message, {
      ...(wire.code === undefined ? {} : { code: wire.code }),
      ...(cause === undefined ? {} : { cause }),
    });
  }
  const err = plainError(wire);
  if (cause !== undefined) err.cause = cause;
  return err;
}

function describeCause(cause: unknown): WireError["cause"] {
  if (cause === undefined) return undefined;
  const err = cause instanceof Error ? cause : new Error(String(cause));
  return { name: err.name, message: err.message, code: errnoCode(err) };
}

function errnoCode(err: Error): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === "string" ? code : undefined;
}

function plainError(wire: { name: string; message: string; code: string | undefined }): Error {
  const err: NodeJS.ErrnoException = new Error(wire.message);
  err.name = wire.name;
  if (wire.code !== undefined) err.code = wire.code;
  return err;
}

/*
 * Decoding what crosses the Node launcher's IPC channel, on the side that receives it: the
 * server decodes the launcher's messages, the launcher the server's. Structured clone can carry
 * any value (a Map, a Date, a string of any length, a field of any type), so nothing is read
 * until it was checked: every field's type and range, no field the protocol does not name, and
 * strings from the launcher bounded. A value that is none of the messages is an answer of kind
 * "bad" naming the field, never a throw inside an event handler. Written by hand rather than
 * with a schema library: the launcher must stay small (launcher.ts).
 */

/** A message that is none of the protocol's: the two sides are out of step. */
interface BadMessage {
  kind: "bad";
  why: string;
}

/** Decoded as UTF-8, a kept byte is at most one UTF-16 unit, so no output is longer in characters. */
const MAX_OUTPUT_CHARS = MAX_OUTPUT_BYTES;
/** An error's message names a path or a program at most; a name, type or code is a word. */
const MAX_MESSAGE_CHARS = 64 * 1024;
const MAX_NAME_CHARS = 256;
/** Stage names are the launcher's few words (plan, spawn, drain). */
const STAGE_NAME = /^[a-z][a-z_]{0,31}$/;
const MAX_STAGES = 16;

/** Why a value is not a message; thrown inside a decoder only, and caught there. */
class Malformed extends Error {}

/** The launcher's message, checked, or what is wrong with it; never throws. */
export function decodeFromLauncher(raw: unknown): FromLauncher | BadMessage {
  return decoding(raw, (m, kind) => {
    switch (kind) {
      case "ready":
        exactly(m, kind, []);
        return { kind };
      case "done": {
        exactly(m, kind, ["id", "outcome", "stages"]);
        const done = { kind, id: requestId(m, kind), outcome: decodeOutcome(field(m, "outcome")) } as const;
        const stages = field(m, "stages");
        return stages === undefined ? done : { ...done, stages: decodeStages(stages) };
      }
      case "failed":
        exactly(m, kind, ["id", "error"]);
        return { kind, id: requestId(m, kind), error: decodeWireError(field(m, "error")) };
      case "broken":
        exactly(m, kind, ["why"]);
        return { kind, why: text(m, kind, "why", MAX_MESSAGE_CHARS) };
      default:
        throw new Malformed(`a message of unknown kind ${JSON.stringify(kind)}`);
    }
  });
}

/** The server's message, checked, or what is wrong with it; never throws. */
export function decodeToLauncher(raw: unknown): ToLauncher | BadMessage {
  return decoding(raw, (m, kind) => {
    switch (kind) {
      case "run": {
        exactly(m, kind, ["id", "request", "aborted", "trace"]);
        const trace = field(m, "trace");
        if (trace !== undefined && trace !== true) throw new Malformed("run.trace must be true or absent");
        const request = decodeWireRequest(field(m, "request"));
        const run = { kind, id: requestId(m, kind), request, aborted: flag(m, kind, "aborted") } as const;
        return trace === true ? { ...run, trace } : run;
      }
      case "abort":
        exactly(m, kind, ["id"]);
        return { kind, id: requestId(m, kind) };
      case "killAll":
      case "close":
        exactly(m, kind, []);
        return { kind };
      default:
        throw new Malformed(`a message of unknown kind ${JSON.stringify(kind)}`);
    }
  });
}

/** Run a decoder on a plain object with a string kind; whatever it throws becomes the answer. */
function decoding<T>(raw: unknown, decode: (m: object, kind: string) => T): T | BadMessage {
  try {
    const m = plain(raw, "the message");
    const kind = field(m, "kind");
    if (typeof kind !== "string") throw new Malformed("the message has no kind");
    return decode(m, kind.slice(0, 64));
  } catch (err) {
    const why = err instanceof Malformed ? err.message : `a message could not be read: ${String(err)}`;
    return { kind: "bad", why };
  }
}

/** An own data property's value (a getter is never run); undefined when absent. */
function field(m: object, name: string): unknown {
  return Object.getOwnPropertyDescriptor(m, name)?.value;
}

/** An object made of fields, as a message is: not an array, a Map, a Buffer or a class's instance. */
function plain(value: unknown, where: string): object {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Malformed(`${where} is not an object`);
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw new Malformed(`${where} is not a plain object`);
  return value;
}

/** No field beyond `kind` and `names`. */
function exactly(m: object, where: string, names: readonly string[]): void {
  for (const key of Reflect.ownKeys(m)) {
    if (key !== "kind" && !names.includes(String(key)))
      throw new Malformed(`${where} has an unknown field ${JSON.stringify(String(key).slice(0, 64))}`);
  }
}

function requestId(m: object, where: string): number {
  const id = field(m, "id");
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1)
    throw new Malformed(`${where}.id must be a whole number of at least 1`);
  return id;
}

function flag(m: object, where: string, name: string): boolean {
  const value = field(m, name);
  if (typeof value !== "boolean") throw new Malformed(`${where}.${name} must be true or false`);
  return value;
}

function text(m: object, where: string, name: string, max = Number.POSITIVE_INFINITY): string {
  const value = field(m, name);
  if (typeof value !== "string") throw new Malformed(`${where}.${name} must be text`);
  if (value.length > max) throw new Malformed(`${where}.${name} is over ${max} characters`);
  return value;
}

/** A field that may be absent, or undefined as structured clone keeps it. */
function optionalText(m: object, where: string, name: string, max?: number): string | undefined {
  return field(m, name) === undefined ? undefined : text(m, where, name, max);
}

function count(m: object, where: string, name: string): number {
  const value = field(m, name);
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw new Malformed(`${where}.${name} must be a whole number of at least 0`);
  return value;
}

/** A duration or size the runner bounds itself: at least 0, Infinity included (no bound). */
function amount(m: object, where: string, name: string): number {
  const value = field(m, name);
  if (typeof value !== "number" || Number.isNaN(value) || value < 0)
    throw new Malformed(`${where}.${name} must be a number of at least 0`);
  return value;
}

function decodeOutcome(value: unknown): ProcessOutcome {
  const where = "done.outcome";
  const o = plain(value, where);
  const names = ["exitCode", "timedOut", "output", "totalBytes", "droppedBytes", "durationMs"];
  exactly(o, where, [...names, "stoppedProcesses"]);
  const exitCode = field(o, "exitCode");
  const status = typeof exitCode === "number" && Number.isInteger(exitCode) && exitCode >= -127;
  if (exitCode !== null && !(status && exitCode <= 255))
    throw new Malformed(`${where}.exitCode must be null or a whole number from -127 to 255`);
  const output = text(o, where, "output", MAX_OUTPUT_CHARS);
  const totalBytes = count(o, where, "totalBytes");
  const droppedBytes = count(o, where, "droppedBytes");
  // Decoded as UTF-8, each kept byte makes at most one UTF-16 unit of the output.
  if (droppedBytes > totalBytes || output.length > totalBytes - droppedBytes)
    throw new Malformed(
      `${where} keeps ${output.length} characters of ${totalBytes - droppedBytes} bytes kept`,
    );
  const durationMs = amount(o, where, "durationMs");
  const stopped = field(o, "stoppedProcesses") === undefined ? 0 : count(o, where, "stoppedProcesses");
  return {
    exitCode,
    timedOut: flag(o, where, "timedOut"),
    output,
    totalBytes,
    droppedBytes,
    durationMs: Number.isFinite(durationMs) ? durationMs : 0,
    ...(stopped > 0 ? { stoppedProcesses: stopped } : {}),
  };
}

function decodeStages(value: unknown): StageTimes {
  const o = plain(value, "done.stages");
  const keys = Reflect.ownKeys(o);
  if (keys.length > MAX_STAGES) throw new Malformed(`done.stages has over ${MAX_STAGES} stages`);
  const stages: StageTimes = {};
  for (const key of keys) {
    const us = field(o, String(key));
    if (typeof key !== "string" || !STAGE_NAME.test(key) || typeof us !== "number" || !Number.isFinite(us))
      throw new Malformed("done.stages must name each stage in lower case with a finite time");
    stages[key] = us;
  }
  return stages;
}

function decodeWireError(value: unknown): WireError {
  const where = "failed.error";
  const e = plain(value, where);
  exactly(e, where, ["relay", "name", "type", "message", "code", "cause"]);
  const cause = field(e, "cause");
  const relay = flag(e, where, "relay");
  const type = text(e, where, "type", MAX_NAME_CHARS);
  // A RelayError's token is one of the error grammar's; any other came from no runner of ours.
  if (relay && !isErrorType(type)) throw new Malformed(`${where}.type is not an error token of the relay`);
  return {
    relay,
    name: text(e, where, "name", MAX_NAME_CHARS),
    type,
    message: text(e, where, "message", MAX_MESSAGE_CHARS),
    code: optionalText(e, where, "code", MAX_NAME_CHARS),
    cause: cause === undefined ? undefined : decodeCause(cause),
  };
}

function decodeCause(value: unknown): NonNullable<WireError["cause"]> {
  const where = "failed.error.cause";
  const c = plain(value, where);
  exactly(c, where, ["name", "message", "code"]);
  return {
    name: text(c, where, "name", MAX_NAME_CHARS),
    message: text(c, where, "message", MAX_MESSAGE_CHARS),
    code: optionalText(c, where, "code", MAX_NAME_CHARS),
  };
}

/** The request as the runner sent it; the runner itself judges what it asks (planSpawn). */
function decodeWireRequest(value: unknown): WireRequest {
  const where = "run.request";
  const r = plain(value, where);
  const optional = ["command", "argv", "cwd", "stdin", "killGraceMs", "pipeGraceMs"];
  exactly(r, where, ["env", "timeoutMs", "maxBufferBytes", "mergeStderr", ...optional]);
  const request: WireRequest = {
    env: decodeEnv(field(r, "env")),
    timeoutMs: amount(r, where, "timeoutMs"),
    maxBufferBytes: amount(r, where, "maxBufferBytes"),
    mergeStderr: flag(r, where, "mergeStderr"),
  };
  const command = optionalText(r, where, "command");
  if (command !== undefined) request.command = command;
  const cwd = optionalText(r, where, "cwd");
  if (cwd !== undefined) request.cwd = cwd;
  if (field(r, "argv") !== undefined) request.argv = decodeArgv(field(r, "argv"));
  if (field(r, "killGraceMs") !== undefined) request.killGraceMs = amount(r, where, "killGraceMs");
  if (field(r, "pipeGraceMs") !== undefined) request.pipeGraceMs = amount(r, where, "pipeGraceMs");
  const stdin = field(r, "stdin");
  if (stdin !== undefined) {
    if (!(stdin instanceof Uint8Array)) throw new Malformed(`${where}.stdin must be bytes`);
    request.stdin = Buffer.isBuffer(stdin)
      ? stdin
      : Buffer.from(stdin.buffer, stdin.byteOffset, stdin.length);
  }
  return request;
}

function decodeArgv(value: unknown): string[] {
  if (!Array.isArray(value)) throw new Malformed("run.request.argv must be a list of text");
  const argv: string[] = [];
  // Indexed, not iterated: a hole in a sparse array is refused like any other entry that is not text.
  for (let i = 0; i < value.length; i++) {
    const arg = field(value, String(i));
    if (typeof arg !== "string") throw new Malformed(`run.request.argv[${i}] must be text`);
    argv.push(arg);
  }
  return argv;
}

/** On a null prototype, as buildEnv made it: a variable named __proto__ stays a variable. */
function decodeEnv(value: unknown): Record<string, string> {
  const env = plain(value, "run.request.env");
  const decoded: Record<string, string> = Object.create(null);
  for (const key of Reflect.ownKeys(env)) {
    const entry = field(env, String(key));
    if (typeof key !== "string" || typeof entry !== "string")
      throw new Malformed("run.request.env must map names to text");
    decoded[key] = entry;
  }
  return decoded;
}
