import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { errorText } from "./format.js";

describe("errorText", () => {
  it("shows an untyped error as its message alone", () => {
    expect(errorText(RelayError.untyped("empty command"))).toBe("[ERROR: empty command]");
  });

  it("keeps an untyped error untyped when it is rebuilt from its parts", () => {
    const sent = RelayError.untyped("unknown forward: f1");
    const rebuilt = new RelayError(sent.type, sent.message, { code: sent.code });
    expect(rebuilt.isUntyped).toBe(true);
    expect(errorText(rebuilt)).toBe("[ERROR: unknown forward: f1]");
  });

  it("shows a typed error with its type token", () => {
    const err = new RelayError("ValueError", "exactly one of command or argv must be given");
    expect(err.isUntyped).toBe(false);
    expect(errorText(err)).toBe("[ERROR: ValueError: exactly one of command or argv must be given]");
  });
});
