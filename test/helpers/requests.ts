import { expect } from "vitest";
import { RelayError } from "../../src/core/index.js";
import type { ProcessRequest } from "../../src/exec/index.js";

/**
 * Requests for the process runner tests: `base` is a 10 s timeout, 1 MiB of
 * output, merged streams and a 200 ms kill grace; `sh` adds a shell command
 * and any field a test overrides.
 */
export function shellRequests(env: ProcessRequest["env"]) {
  const base = { env, timeoutMs: 10_000, maxBufferBytes: 1 << 20, mergeStderr: true, killGraceMs: 200 };
  const sh = (command: string, extra: Partial<ProcessRequest> = {}): ProcessRequest => ({
    ...base,
    command,
    ...extra,
  });
  return { base, sh };
}

/** The RelayError `promise` rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<RelayError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RelayError);
  return err as RelayError;
}
