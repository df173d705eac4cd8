import { describe, expect, it } from "vitest";
import { describeError, ERROR_TYPES, type ErrorType, isErrorType, RelayError } from "./errors.js";
import { fail, ok, type Result } from "./result.js";

describe("the error grammar", () => {
  it("takes the tokens of ErrorType, and refuses any other literal at compile time", () => {
    const err = new RelayError("ValueError", "empty command");
    expect(describeError(err)).toEqual({ type: "ValueError", message: "empty command" });
    // @ts-expect-error a token outside the grammar (here a misspelling) is not a RelayError type
    expect(new RelayError("ValueErorr", "x").type).toBe("ValueErorr");
  });

  it("checks a token that arrives as text against the closed list before it is one", () => {
    // What the launcher's reply carries: the token its runner's RelayError had, as a string.
    const wire: { type: string } = { type: "NotADirectoryError" };
    if (!isErrorType(wire.type)) throw new Error("a token of the list was refused");
    const token: ErrorType = new RelayError(wire.type, "cwd is not a directory: /etc/passwd").type;
    expect(token).toBe("NotADirectoryError");
    expect(isErrorType("ValueErorr")).toBe(false);
    expect(isErrorType("constructor")).toBe(false);
    expect(ERROR_TYPES.every(isErrorType)).toBe(true);
  });

  it("describes a foreign error by its own name, and the untyped form by its message", () => {
    const foreign = Object.assign(new Error("bad fd"), { name: "SystemError", code: "EBADF" });
    expect(describeError(foreign)).toEqual({ type: "SystemError", message: "EBADF: bad fd" });
    expect(describeError(RelayError.untyped("empty command"))).toEqual({
      type: "",
      message: "empty command",
    });
    expect(describeError("plain")).toEqual({ type: "Error", message: "plain" });
  });
});

describe("Result", () => {
  it("holds the value under value and the failure under error, and narrows on ok", () => {
    const parse = (text: string): Result<number, "not-a-number"> =>
      Number.isNaN(Number(text)) ? fail("not-a-number") : ok(Number(text));
    expect(parse("42")).toEqual({ ok: true, value: 42 });
    expect(parse("x")).toEqual({ ok: false, error: "not-a-number" });
    const parsed = parse("7");
    // @ts-expect-error the value is only there once ok is known to be true
    expect(parsed.value).toBe(7);
    expect(parsed.ok ? parsed.value + 1 : parsed.error).toBe(8);
  });
});
