import { deserialize, serialize } from "node:v8";
import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { buildEnv } from "./env.js";
import { fromWireError, fromWireRequest, toWireError, toWireRequest } from "./launcher-protocol.js";
import type { ProcessRequest } from "./types.js";

/** What the IPC channel does to a message with serialization "advanced". */
const hop = <T>(value: T): T => deserialize(serialize(value)) as T;

describe("requests on the wire", () => {
  const request: ProcessRequest = {
    command: "cat",
    env: buildEnv({ PATH: "/bin" }, '{"__proto__":"x"}'),
    timeoutMs: Number.POSITIVE_INFINITY,
    maxBufferBytes: 1024,
    mergeStderr: false,
    killGraceMs: 10,
  };

  it("carries stdin as bytes and gives the same text back", () => {
    const wire = hop(toWireRequest({ ...request, stdin: "héllo\u0000" }));
    expect(Buffer.isBuffer(wire.stdin)).toBe(true);
    expect(fromWireRequest(wire)).toEqual({ ...request, stdin: "héllo\u0000" });
  });

  it("keeps an absent stdin absent and an empty one empty", () => {
    expect("stdin" in fromWireRequest(hop(toWireRequest(request)))).toBe(false);
    expect(fromWireRequest(hop(toWireRequest({ ...request, stdin: "" }))).stdin).toBe("");
  });

  it("restores the environment on a null prototype with odd names intact", () => {
    const back = fromWireRequest(hop(toWireRequest(request)));
    expect(Object.getPrototypeOf(back.env)).toBeNull();
    expect(Object.keys(back.env)).toEqual(Object.keys(request.env));
    expect(Object.getOwnPropertyDescriptor(back.env, "__proto__")?.value).toBe("x");
    expect(back.timeoutMs).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("errors on the wire", () => {
  it("rebuilds a RelayError with its type, message, code and cause", () => {
    const cause: NodeJS.ErrnoException = new Error("ENOENT: no such file");
    cause.code = "ENOENT";
    const original = new RelayError("FileNotFoundError", "cwd does not exist: /x", { code: "E_CWD", cause });
    const back = fromWireError(hop(toWireError(original)));
    expect(back).toBeInstanceOf(RelayError);
    expect(back).toMatchObject({ name: "RelayError", type: "FileNotFoundError", code: "E_CWD" });
    expect(back.message).toBe("cwd does not exist: /x");
    expect(back.cause).toMatchObject({ message: "ENOENT: no such file", code: "ENOENT" });
  });

  it("keeps the default code of a RelayError", () => {
    const back = fromWireError(hop(toWireError(new RelayError("ValueError", "empty command"))));
    expect(back).toMatchObject({ type: "ValueError", code: "ValueError" });
    expect(back.cause).toBeUndefined();
  });

  it("leaves other errors plain, with their name and errno code", () => {
    const original: NodeJS.ErrnoException = new TypeError("bad env");
    original.code = "ERR_INVALID_ARG_VALUE";
    const back = fromWireError(hop(toWireError(original)));
    expect(back).not.toBeInstanceOf(RelayError);
    expect(back).toMatchObject({ name: "TypeError", message: "bad env", code: "ERR_INVALID_ARG_VALUE" });
    expect(fromWireError(hop(toWireError("a string")))).toMatchObject({ name: "Error", message: "a string" });
  });
});
