import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { assertBindingShape, declaredParameters, EXPECTED_PARAMETERS, ptyBinding } from "./pty-binding.js";

describe("ptyBinding", () => {
  it("loads node-pty's native half with the entry points the local transport calls", () => {
    const binding = ptyBinding();
    expect(typeof binding.fork).toBe("function");
    expect(typeof binding.resize).toBe("function");
    // Node's module cache hands out the same binding every time.
    expect(ptyBinding()).toBe(binding);
  });

  it("reads the parameters of the installed native entry points", () => {
    const binding = ptyBinding() as unknown as Record<string, (...args: unknown[]) => unknown>;
    expect(declaredParameters(binding.fork as (...args: unknown[]) => unknown, "fork")).toEqual([
      ...EXPECTED_PARAMETERS.fork,
    ]);
    expect(declaredParameters(binding.resize as (...args: unknown[]) => unknown, "resize")).toEqual([
      ...EXPECTED_PARAMETERS.resize,
    ]);
  });

  /** A stand-in for another node-pty build: native-style functions that only report their usage. */
  const nativeLike = (usage: string) => () => {
    throw new TypeError(usage);
  };
  const message = (binding: Record<string, unknown>): string => {
    try {
      assertBindingShape(binding, "pty.node");
    } catch (err) {
      expect(err).toBeInstanceOf(RelayError);
      return (err as RelayError).message;
    }
    return "accepted";
  };
  const RESIZE = nativeLike("Usage: pty.resize(fd, cols, rows)");

  it("accepts the pinned shape", () => {
    const fork = nativeLike(`Usage: pty.fork(${EXPECTED_PARAMETERS.fork.join(", ")})`);
    expect(message({ fork, resize: RESIZE })).toBe("accepted");
  });

  it("fails loudly on a fork that takes other parameters, fewer, or answers in another way", () => {
    // An upgrade that inserted a parameter: every later argument would shift by one.
    const shifted = nativeLike(
      "Usage: pty.fork(file, args, env, cwd, cols, rows, uid, gid, utf8, useConpty, helperPath, onexit)",
    );
    expect(message({ fork: shifted, resize: RESIZE })).toBe(
      "pty.node: fork takes (file, args, env, cwd, cols, rows, uid, gid, utf8, useConpty, helperPath, onexit), " +
        "expected (file, args, env, cwd, cols, rows, uid, gid, utf8, helperPath, onexit): an unsupported node-pty version",
    );
    const fewer = nativeLike("Usage: pty.fork(file, args, env, cwd, cols, rows, uid, gid, utf8, onexit)");
    expect(message({ fork: fewer, resize: RESIZE })).toMatch(
      /^pty\.node: fork takes \(file, .*, utf8, onexit\)/,
    );
    expect(message({ fork: () => ({ fd: 1, pid: 1, pty: "" }), resize: RESIZE })).toMatch(
      /^pty\.node: fork takes an unknown signature, expected/,
    );
    expect(message({ resize: RESIZE })).toBe("pty.node lacks fork: an unsupported node-pty version");
  });
});
