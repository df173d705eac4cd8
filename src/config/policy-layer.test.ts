import { describe, expect, it } from "vitest";
import { parsePolicyLayer, tagNameProblem } from "./policy-layer.js";

function layer(value: unknown, field?: string) {
  const parsed = parsePolicyLayer(value, field);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

function problem(value: unknown, field?: string): string {
  const parsed = parsePolicyLayer(value, field);
  if (parsed.ok) throw new Error("accepted");
  return parsed.error;
}

describe("a policy layer", () => {
  it("sets only the fields it names", () => {
    expect(layer({})).toEqual({});
    expect(layer({ confirm_tier3: false })).toEqual({ confirmTier3: false });
    expect(Object.keys(layer({ mode: "open" }))).toEqual(["mode"]);
  });

  it("takes every field, the mode in any case like RELAY_SHELL_POLICY_MODE", () => {
    const parsed = layer({
      mode: " ReadOnly ",
      deny: ["^ssh_exec ", "rm -rf"],
      allow: "^shell_exec systemctl restart",
      consent: { enabled: true, lease_mode: "Window" },
      confirm_tier3: true,
      max_tier: 2,
    });
    expect(parsed).toMatchObject({
      mode: "readonly",
      consent: true,
      consentLeaseMode: "window",
      confirmTier3: true,
      maxTier: 2,
    });
    expect(parsed.deny?.map((r) => [r.source, r.flags])).toEqual([
      ["^ssh_exec ", "iu"],
      ["rm -rf", "iu"],
    ]);
    expect(parsed.allow?.map((r) => r.source)).toEqual(["^shell_exec systemctl restart"]);
  });

  it("takes consent as a switch or a table that may name only the lease mode", () => {
    expect(layer({ consent: true })).toEqual({ consent: true });
    expect(layer({ consent: false })).toEqual({ consent: false });
    expect(layer({ consent: "on" })).toEqual({ consent: true });
    expect(layer({ consent: "OFF" })).toEqual({ consent: false });
    expect(layer({ consent: { lease_mode: "session" } })).toEqual({ consentLeaseMode: "session" });
    expect(layer({ consent: { enabled: false } })).toEqual({ consent: false });
  });

  it("keeps an empty list: a layer may clear the allow list", () => {
    expect(layer({ allow: [] })).toEqual({ allow: [] });
    expect(layer({ max_tier: 0 })).toEqual({ maxTier: 0 });
  });

  it.each([
    [{ mode: "strict" }, "mode: mode must be open, guarded or readonly"],
    [{ mode: 1 }, "mode: mode must be open, guarded or readonly"],
    [{ deny: 5 }, "deny: deny must be a string or a list of strings"],
    [{ allow: { a: 1 } }, "allow: allow must be a string or a list of strings"],
    [{ deny: ["ok", 7] }, "deny[1]: each pattern must be a string"],
    [{ deny: ["ok", "(unclosed"] }, /^deny\[1\]: Invalid regular expression/],
    [{ allow: "(?i)x" }, /^allow\[0\]: inline flags \(\?i\) are Python-only syntax/],
    [{ deny: ["a", ""] }, "deny[1]: an empty pattern would match every call"],
    [
      { consent: "yes" },
      'consent: consent must be true, false, "on", "off" or a table { enabled, lease_mode }',
    ],
    [{ consent: 1 }, /^consent: consent must be/],
    [{ consent: { enabled: "on" } }, "consent.enabled: enabled must be true or false"],
    [
      { consent: { lease_mode: "always" } },
      "consent.lease_mode: lease_mode must be manual, window or session",
    ],
    [{ consent: { enable: true } }, 'consent: unknown key "enable"; accepted keys are enabled, lease_mode'],
    [{ confirm_tier3: "true" }, "confirm_tier3: confirm_tier3 must be true or false"],
    [{ max_tier: 4 }, "max_tier: max_tier must be an integer 0..3"],
    [{ max_tier: -1 }, "max_tier: max_tier must be an integer 0..3"],
    [{ max_tier: 1.5 }, "max_tier: max_tier must be an integer 0..3"],
    [{ max_tier: "2" }, "max_tier: max_tier must be an integer 0..3"],
    [
      { mode: "open", modes: "x" },
      'unknown key "modes"; accepted keys are mode, deny, allow, consent, confirm_tier3, max_tier',
    ],
    [{ a: 1, b: 2 }, /^unknown keys "a", "b"; accepted keys are/],
    ["readonly", "a policy must be a table of settings"],
    [["mode"], "a policy must be a table of settings"],
    [null, "a policy must be a table of settings"],
  ])("refuses %j, naming the field", (value, expected) => {
    const message = problem(value);
    if (typeof expected === "string") expect(message).toBe(expected);
    else expect(message).toMatch(expected);
  });

  it("names the field under where the layer sits", () => {
    expect(problem({ mode: "x" }, "tags.prod")).toBe(
      "tags.prod.mode: mode must be open, guarded or readonly",
    );
    expect(problem({ deny: ["(", "x"] }, "policy")).toMatch(/^policy\.deny\[0\]: /);
    expect(problem({ x: 1 }, "default")).toMatch(/^default: unknown key "x"/);
    expect(problem(3, "tags.lab")).toBe("tags.lab: a policy must be a table of settings");
  });
});

describe("tag names", () => {
  it("are 1..64 letters, digits and . _ -", () => {
    expect(tagNameProblem("prod")).toBeNull();
    expect(tagNameProblem("eu-west.db_1")).toBeNull();
    expect(tagNameProblem("x".repeat(64))).toBeNull();
    expect(tagNameProblem("x".repeat(65))).toMatch(/must be 1\.\.64 letters/);
    expect(tagNameProblem("")).toBe('tag name "" must be 1..64 letters, digits and . _ -');
    expect(tagNameProblem("a b")).toMatch(/^tag name "a b"/);
    expect(tagNameProblem("tag:prod")).not.toBeNull();
  });
});
