import { describe, expect, it } from "vitest";
import { createArgParser, toInputSchema } from "./params.js";

describe("string parameters with a pattern", () => {
  const table = {
    id: { type: "string", description: "an id", pattern: /^[a-z]{1,4}$/ },
    ref: { type: "string", description: "a reference", pattern: /^[A-Z]+$/, optional: true },
  } as const;
  const parser = createArgParser(table);

  it("admits a value that matches as a whole and leaves an absent optional one undefined", () => {
    expect(parser.parse({ id: "abc" })).toEqual({ ok: true, value: { id: "abc" } });
    expect(parser.parse({ id: "abc", ref: "XY" })).toEqual({ ok: true, value: { id: "abc", ref: "XY" } });
  });

  it("refuses a value that does not match, naming the field and the pattern", () => {
    expect(parser.parse({ id: "ab/../c" })).toEqual({
      ok: false,
      error: ["id: must match ^[a-z]{1,4}$"],
    });
    expect(parser.parse({ id: "abc", ref: "" })).toEqual({
      ok: false,
      error: ["ref: must match ^[A-Z]+$"],
    });
    expect(parser.parse({})).toMatchObject({ ok: false });
  });

  it("gives the same answer on every call with a global pattern", () => {
    const global = createArgParser({ id: { type: "string", description: "x", pattern: /^a$/g } });
    for (let i = 0; i < 3; i++) expect(global.parse({ id: "a" }).ok).toBe(true);
  });

  it("announces the pattern, and the optional field as not required", () => {
    expect(toInputSchema(table)).toEqual({
      type: "object",
      properties: {
        id: { type: "string", description: "an id", pattern: "^[a-z]{1,4}$" },
        ref: { type: "string", description: "a reference", pattern: "^[A-Z]+$" },
      },
      required: ["id"],
    });
    // A pattern that needs a flag cannot be written in JSON Schema: the server still checks it.
    const folded = toInputSchema({ x: { type: "string", description: "x", pattern: /^a$/i } });
    expect(folded.properties.x).toEqual({ type: "string", description: "x" });
  });
});
