import { RelayError, type StageTimes } from "../core/index.js";
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
  | { kind: "failed"; id: number; error: WireError };

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
  if (wire.relay) {
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
