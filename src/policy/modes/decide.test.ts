import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Tier } from "../../core/index.js";
import type { Classification, ClassifyOptions, PolicyMode } from "../types.js";
import { assessTier, decide, type PolicyConfig, policyProbe, targetLines } from "./decide.js";
import { widenHostTokens } from "./ip-widen.js";

const re = (source: string) => new RegExp(source, "iu");
/** The settings' way of writing a policy: one deny and one allow regex, or none. */
type TestConfig = Omit<Partial<PolicyConfig>, "deny" | "allow"> & {
  deny?: RegExp | null;
  allow?: RegExp | null;
};
const config = (over: TestConfig = {}): PolicyConfig => {
  const { deny = null, allow = null, ...rest } = over;
  return {
    mode: "open",
    maxTier: 3,
    name: null,
    maxProbe: 1_000_000,
    ...rest,
    deny: deny ? [{ regex: deny, label: "RELAY_SHELL_POLICY_DENY" }] : [],
    allow: allow ? [{ regex: allow, label: "RELAY_SHELL_POLICY_ALLOW" }] : [],
  };
};
const cls = (tier: Tier): Classification => ({
  tier,
  basis:
    tier === 0
      ? "read_only_tool"
      : tier === 1
        ? "default"
        : tier === 2
          ? "package_change"
          : "file_destruction",
  part: tier === 3 ? "rm -rf /" : "",
});
const MODES: PolicyMode[] = ["open", "guarded", "readonly"];
const TIERS: Tier[] = [0, 1, 2, 3];

describe("deny list first, in every mode", () => {
  it.each(MODES)("%s: a deny match refuses even Tier 0 and even with an allow match", (mode) => {
    for (const tier of TIERS) {
      const d = decide(
        config({ mode, deny: re("secret"), allow: re(".") }),
        "shell_exec",
        "cat secret",
        cls(tier),
      );
      expect(d).toEqual({
        ...cls(tier),
        allowed: false,
        reason: "matched RELAY_SHELL_POLICY_DENY",
        matched: "RELAY_SHELL_POLICY_DENY",
      });
    }
  });

  it("searches unanchored, so ^rm never matches (the tool name comes first)", () => {
    const d = decide(config({ deny: re("^rm") }), "shell_exec", "rm -rf /", cls(3));
    expect(d.allowed).toBe(true);
    expect(d.reason).toBe("permitted");
  });

  it("a rule anchored on the tool name blocks that whole tool", () => {
    const c = config({ deny: re("^ssh_keyscan") });
    expect(decide(c, "ssh_keyscan", "h1", cls(0)).allowed).toBe(false);
    expect(decide(c, "ssh_keyscan", "", cls(0)).allowed).toBe(false);
    expect(decide(c, "ssh_check", "ssh_keyscan", cls(0)).allowed).toBe(true);
  });

  it("the contract's fork-bomb rule refuses in open mode", () => {
    const c = config({ deny: re(String.raw`forkbomb|:\(\)\s*\{`) });
    expect(decide(c, "shell_exec", "forkbomb now", cls(1)).reason).toBe("matched RELAY_SHELL_POLICY_DENY");
    expect(decide(c, "shell_exec", ":(){ :|:& };:", cls(3)).allowed).toBe(false);
    expect(decide(c, "shell_exec", "echo fork bomb", cls(1)).allowed).toBe(true);
  });

  it("catches a host spelled as an integer once the probe is IP-widened", () => {
    const text = widenHostTokens("uptime\n2130706433", ["2130706433"]);
    const d = decide(config({ deny: re(String.raw`127\.0\.0\.1`) }), "ssh_exec", text, cls(1));
    expect(d.allowed).toBe(false);
    const bounded = config({ deny: re(String.raw`(^|\s)127\.0\.0\.1(\s|$)`) });
    const sneaky = widenHostTokens("echo 127.0.0.10\n2130706433", ["2130706433"]);
    expect(decide(bounded, "ssh_exec", sneaky, cls(1)).allowed).toBe(false);
  });
});

describe("modes", () => {
  it("readonly admits only Tier 0 and ignores the allow list", () => {
    const c = config({ mode: "readonly", allow: re(".") });
    expect(decide(c, "server_info", "", cls(0))).toEqual({
      ...cls(0),
      allowed: true,
      reason: "permitted",
      matched: null,
    });
    expect(decide(c, "shell_exec", "ls", cls(1)).reason).toBe("readonly mode refuses Tier 1 (REVERSIBLE)");
    expect(decide(c, "shell_exec", "apt install x", cls(2)).reason).toBe(
      "readonly mode refuses Tier 2 (STATEFUL)",
    );
    expect(decide(c, "shell_exec", "rm -rf /", cls(3))).toEqual({
      ...cls(3),
      allowed: false,
      reason: "readonly mode refuses Tier 3 (IRREVERSIBLE)",
      matched: null,
    });
  });

  it("guarded passes Tier 0/1 and needs an allow match from Tier 2", () => {
    const none = config({ mode: "guarded" });
    const allow = config({ mode: "guarded", allow: re("apt|shell_exec rm") });
    expect(decide(none, "shell_exec", "ls", cls(1)).allowed).toBe(true);
    expect(decide(none, "server_info", "", cls(0)).reason).toBe("permitted");
    expect(decide(none, "shell_exec", "apt install x", cls(2)).reason).toBe(
      "guarded mode refuses Tier 2 (STATEFUL) without an RELAY_SHELL_POLICY_ALLOW match",
    );
    expect(decide(allow, "shell_exec", "apt install x", cls(2))).toEqual({
      ...cls(2),
      allowed: true,
      reason: "guarded: allowed by RELAY_SHELL_POLICY_ALLOW",
      matched: "RELAY_SHELL_POLICY_ALLOW",
    });
    expect(decide(allow, "shell_exec", "rm -rf /tmp/x", cls(3)).allowed).toBe(true);
    expect(decide(allow, "shell_exec", "mkfs /dev/sda", cls(3)).reason).toBe(
      "guarded mode refuses Tier 3 (IRREVERSIBLE) without an RELAY_SHELL_POLICY_ALLOW match",
    );
    expect(decide(allow, "shell_exec", "ls", cls(1)).reason).toBe("permitted");
  });

  it("open admits every tier with reason permitted and never consults the allow list", () => {
    for (const tier of TIERS) {
      const d = decide(config({ allow: re("^$") }), "shell_exec", "rm -rf /", cls(tier));
      expect(d).toEqual({ ...cls(tier), allowed: true, reason: "permitted", matched: null });
    }
  });

  it("matches the full decision table (property)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MODES),
        fc.constantFrom(...TIERS),
        fc.boolean(),
        fc.constantFrom<"none" | "hit" | "miss">("none", "hit", "miss"),
        fc.string(),
        (mode, tier, denyHits, allowKind, text) => {
          const deny = denyHits ? re("") : null;
          const allow = allowKind === "none" ? null : allowKind === "hit" ? re("") : re("(?!)");
          const d = decide(config({ mode, deny, allow }), "shell_exec", text, cls(tier));
          const expected = denyHits
            ? false
            : mode === "open" ||
              (mode === "readonly" && tier === 0) ||
              (mode === "guarded" && (tier < 2 || allowKind === "hit"));
          expect(d.allowed).toBe(expected);
          expect(d.tier).toBe(tier);
        },
      ),
    );
  });
});

describe("the probe", () => {
  it("is tool, space, text with Python's strip", () => {
    expect(policyProbe("shell_exec", "ls\n")).toBe("shell_exec ls");
    expect(policyProbe("server_info", "")).toBe("server_info");
    expect(policyProbe("", "  ls")).toBe("ls");
    expect(policyProbe("t", "ls\u001c\u0085")).toBe("t ls");
    expect(policyProbe("t", "ls\ufeff")).toBe("t ls\ufeff");
  });

  it("anchored rules see the stripped probe", () => {
    const c = config({ deny: re("^shell_exec ls$") });
    expect(decide(c, "shell_exec", "ls \n\t", cls(1)).allowed).toBe(false);
  });

  it("runs the regexes on at most maxProbe characters", () => {
    const text = `${"a".repeat(100)}NEEDLE`;
    const probeLength = "shell_exec ".length + text.length;
    expect(
      decide(config({ deny: re("NEEDLE"), maxProbe: probeLength }), "shell_exec", text, cls(1)).allowed,
    ).toBe(false);
    expect(
      decide(config({ deny: re("NEEDLE"), maxProbe: probeLength - 1 }), "shell_exec", text, cls(1)).allowed,
    ).toBe(true);
  });

  it("refuses a non-positive bound instead of matching nothing", () => {
    expect(() => decide(config({ maxProbe: 0 }), "shell_exec", "ls", cls(1))).toThrow(RangeError);
  });

  it("gives the same answer every time with a global regex, without mutating it", () => {
    const deny = /rm/g;
    const c = config({ deny });
    for (let i = 0; i < 3; i++) expect(decide(c, "shell_exec", "rm x", cls(3)).allowed).toBe(false);
    expect(deny.lastIndex).toBe(0);
    const frozen = Object.freeze(/rm/gy);
    expect(decide(config({ deny: frozen }), "shell_exec", "rm x", cls(3)).allowed).toBe(false);
  });
});

function fakeClassifier(result: Classification) {
  const calls: { text: string; options: ClassifyOptions | undefined }[] = [];
  return {
    calls,
    classify(text: string, options?: ClassifyOptions): Classification {
      calls.push({ text, options });
      return result;
    },
  };
}

describe("assessTier", () => {
  it("a fixed tier ignores the text and never calls the classifier", () => {
    const fake = fakeClassifier(cls(3));
    expect(assessTier({ kind: "fixed", tier: 0 }, "rm -rf /", fake)).toEqual({
      tier: 0,
      basis: "read_only_tool",
      part: "",
    });
    expect(assessTier({ kind: "fixed", tier: 1 }, "rm -rf /", fake)).toEqual({
      tier: 1,
      basis: "default",
      part: "",
    });
    // A tool that changes state by design, whatever its text says (infra_replicate).
    expect(assessTier({ kind: "fixed", tier: 2 }, "rm -rf /", fake)).toEqual({
      tier: 2,
      basis: "mutating_tool",
      part: "",
    });
    expect(fake.calls).toHaveLength(0);
  });

  it("a heuristic tool takes the classifier's answer at or above the floor", () => {
    const fake = fakeClassifier(cls(3));
    expect(
      assessTier({ kind: "heuristic", floor: 1, windows: true }, "Remove-Item -Recurse x", fake),
    ).toEqual(cls(3));
    expect(fake.calls).toEqual([{ text: "Remove-Item -Recurse x", options: { windows: true } }]);
    const stateful = fakeClassifier(cls(2));
    expect(assessTier({ kind: "heuristic", floor: 2, windows: false }, "x", stateful)).toEqual(cls(2));
    expect(stateful.calls[0]?.options).toEqual({ windows: false });
  });

  it("raises to the floor and says the tool decided", () => {
    const low = fakeClassifier({ tier: 1, basis: "default", part: "" });
    expect(assessTier({ kind: "heuristic", floor: 2, windows: false }, "upload /a h:/b", low)).toEqual({
      tier: 2,
      basis: "mutating_tool",
      part: "",
    });
    const zero = fakeClassifier({ tier: 0, basis: "read_only_tool", part: "" });
    expect(assessTier({ kind: "heuristic", floor: 1, windows: false }, "ls", zero)).toEqual({
      tier: 1,
      basis: "default",
      part: "",
    });
  });
});

describe("target lines (ADR 0020)", () => {
  const targets = targetLines([
    { kind: "cwd", value: "/tmp/canary-dir" },
    { kind: "host", value: "db1" },
    { kind: "cwd", value: "/tmp/canary-dir" },
  ]);

  it("are `kind=value`, each distinct line once, in order", () => {
    expect(targets).toEqual(["cwd=/tmp/canary-dir", "host=db1"]);
  });

  it("a deny pattern that matches only a target refuses, in every mode", () => {
    for (const mode of MODES) {
      const d = decide(config({ mode, deny: re("canary") }), "shell_exec", "touch ./x", cls(1), targets);
      expect(d).toEqual({
        ...cls(1),
        allowed: false,
        reason: "matched RELAY_SHELL_POLICY_DENY",
        matched: "RELAY_SHELL_POLICY_DENY",
      });
    }
  });

  it("anchors apply to one target line, and never join the probe to a target", () => {
    const deny = (source: string) =>
      decide(config({ deny: re(source) }), "shell_exec", "touch ./x", cls(1), targets).allowed;
    expect(deny("^cwd=/tmp/canary-dir$")).toBe(false);
    expect(deny("^host=db1$")).toBe(false);
    expect(deny("^cwd=/tmp$")).toBe(true);
    // The probe and the targets are separate strings: no pattern spans them.
    expect(deny("x\\s+cwd=")).toBe(true);
    expect(deny("canary-dir\\s+host")).toBe(true);
    // Existing anchored patterns keep their meaning on the probe.
    expect(deny("^shell_exec touch")).toBe(false);
    expect(deny("\\./x$")).toBe(false);
  });

  it("an allow pattern is never satisfied by a target (guarded does not get wider)", () => {
    const c = config({ mode: "guarded", allow: re("canary|^cwd=") });
    const d = decide(c, "shell_exec", "apt install x", cls(2), targets);
    expect(d.allowed).toBe(false);
    expect(d.reason).toMatch(/^guarded mode refuses Tier 2/);
    // The same allow pattern still admits when the probe itself matches.
    expect(decide(c, "shell_exec", "apt install canary", cls(2), targets).allowed).toBe(true);
  });

  it("a deny match on a target wins over an allow match on the probe", () => {
    const c = config({ mode: "guarded", deny: re("^host=db1$"), allow: re("apt") });
    expect(decide(c, "ssh_exec", "apt install x\ndb1", cls(2), targets).allowed).toBe(false);
  });

  it("without a deny list, targets change no decision, even with an allow pattern written for them (property)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...MODES), fc.constantFrom(...TIERS), fc.string(), (mode, tier, value) => {
        const lines = targetLines([{ kind: "cwd", value }]);
        const literal = `cwd=${value}`.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
        const c = config({ mode, allow: re(literal) });
        expect(decide(c, "shell_exec", "ls", cls(tier), lines)).toEqual(
          decide(c, "shell_exec", "ls", cls(tier)),
        );
      }),
    );
  });
});

describe("a policy other than the settings' default (docs/policy.md)", () => {
  const named = (over: TestConfig = {}) => config({ name: "tag:prod", ...over });

  it("names itself in every refusal and the pattern that matched, never the pattern's text", () => {
    const c = {
      ...named({ mode: "guarded" }),
      deny: [
        { regex: re("^never"), label: "RELAY_SHELL_POLICY_DENY" },
        { regex: re("secret"), label: "deny[1] of tag:prod" },
      ],
    };
    const d = decide(c, "shell_exec", "cat secret", cls(0));
    expect(d).toMatchObject({ allowed: false, reason: "policy tag:prod: matched deny[1] of tag:prod" });
    expect(d.matched).toBe("deny[1] of tag:prod");
    expect(decide(named({ mode: "readonly" }), "shell_exec", "x", cls(1)).reason).toBe(
      "policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)",
    );
    expect(decide(named({ mode: "guarded" }), "shell_exec", "x", cls(2)).reason).toBe(
      "policy tag:prod: guarded mode refuses Tier 2 (STATEFUL) without a match in its allow list",
    );
  });

  it("admits by the first allow pattern that matches, and says which", () => {
    const c = {
      ...named({ mode: "guarded" }),
      allow: [
        { regex: re("^shell_exec apt "), label: "allow[0] of tag:prod" },
        { regex: re("systemctl restart"), label: "allow[1] of tag:prod" },
      ],
    };
    const d = decide(c, "shell_exec", "systemctl restart nginx", cls(2));
    expect(d).toMatchObject({ allowed: true, reason: "guarded: allowed by allow[1] of tag:prod" });
    expect(d.matched).toBe("allow[1] of tag:prod");
  });

  it.each(MODES)(
    "%s: max_tier refuses every tier above it, before the mode and after the deny list",
    (mode) => {
      for (const maxTier of TIERS) {
        for (const tier of TIERS) {
          const d = decide(named({ mode, maxTier, allow: re(".") }), "shell_exec", "x", cls(tier));
          if (tier > maxTier) {
            expect(d.allowed).toBe(false);
            expect(d.reason).toMatch(/^policy tag:prod: Tier \d \(\w+\) is above its max_tier \d$/);
          } else {
            // Within the bound the mode decides as it would without one.
            const unbounded = decide(named({ mode, allow: re(".") }), "shell_exec", "x", cls(tier));
            expect(d).toEqual(unbounded);
          }
        }
      }
      const denied = decide(named({ mode, maxTier: 0, deny: re("x") }), "shell_exec", "x", cls(3));
      expect(denied.reason).toBe("policy tag:prod: matched RELAY_SHELL_POLICY_DENY");
    },
  );
});
