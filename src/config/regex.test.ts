import { describe, expect, it } from "vitest";
import { compilePolicyRegex, findPythonOnlySyntax } from "./regex.js";

describe("findPythonOnlySyntax", () => {
  it.each([
    ["(?i)rm -rf", "inline flags (?i)"],
    ["(?x) rm \\s+", "inline flags (?x)"],
    ["rm(?im)", "inline flags (?im)"],
    ["(?s-i)x", "inline flags (?s-i)"],
    ["(?x:a b)", 'scoped flags with "x"'],
    ["(?P<cmd>rm)", "(?P<name>...)"],
    ["(?P<c>a)(?P=c)", "(?P<name>...)"],
    ["(a)(?P=x)", "(?P=name)"],
    ["a*+", "possessive"],
    ["a++b", "possessive"],
    ["a?+", "possessive"],
    ["a{2,3}+", "possessive"],
    ["(?>rm|mkfs)", "atomic groups"],
    ["rm(?# comment)", "comments"],
    ["(a)?(?(1)b|c)", "conditional"],
    ["\\Arm", "\\A"],
    ["rm\\Z", "\\Z"],
  ])("%s is named as Python-only (%s)", (source, hint) => {
    expect(findPythonOnlySyntax(source)).toContain(hint);
  });

  it.each([
    "rm\\s+-rf",
    "forkbomb|:\\(\\)\\s*\\{",
    "(?:a|b)+",
    "(?<name>x)\\k<name>",
    "(?=a)(?!b)(?<=c)(?<!d)",
    "a+?",
    "a*?b",
    "a{2,3}?",
    "[(?P<x>]",
    "[*+]+",
    "\\(?P",
    "\\(?i\\)",
    "a\\++",
    "x{,3}",
    "^ssh_keyscan",
  ])("%s is left to the engine", (source) => {
    expect(findPythonOnlySyntax(source)).toBeNull();
  });
});

describe("compilePolicyRegex", () => {
  it("compiles with flags iu", () => {
    const compiled = compilePolicyRegex("^SHELL_EXEC rm");
    expect(compiled.ok && compiled.value.flags).toBe("iu");
    expect(compiled.ok && compiled.value.test("shell_exec RM -rf")).toBe(true);
  });

  it("returns the engine's message, including what the u flag refuses", () => {
    expect(compilePolicyRegex("a(")).toEqual({
      ok: false,
      error: "Invalid regular expression: /a(/iu: Unterminated group",
    });
    expect(compilePolicyRegex("\\-rf")).toEqual({
      ok: false,
      error:
        "Invalid regular expression: /\\-rf/iu: Invalid escape (with the u flag only syntax characters may be escaped: write - not \\- outside [...])",
    });
    expect(compilePolicyRegex("[").ok).toBe(false);
  });

  it("prefers the Python hint over the engine message", () => {
    expect(compilePolicyRegex("(?i)rm")).toEqual({
      ok: false,
      error:
        'inline flags (?i) are Python-only syntax; remove them (patterns are always compiled with flags "iu")',
    });
  });
});
