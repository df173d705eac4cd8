import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Tier } from "../core/index.js";
import { BASIS_TEXT, type Basis } from "../policy/index.js";
import { attachNotices, computeNotices, HEURISTIC_DISCLAIMER, type NoticeInput } from "./notices.js";

const base: NoticeInput = {
  enabled: true,
  tier: 3,
  basis: "file_destruction",
  mode: "open",
  brokerOn: false,
  confirmed: false,
};

const bases = Object.keys(BASIS_TEXT) as Basis[];

describe("notices", () => {
  it("names tier, basis and consequence, and ends every tier line with the disclaimer (SC-3)", () => {
    expect(computeNotices(base)).toEqual([
      "[NOTICE tier 3 (IRREVERSIBLE), deletes or overwrites files (file_destruction). It may not be undoable, " +
        "and no confirmation step was required; set RELAY_SHELL_CONFIRM_TIER3=true to require one. " +
        "Classification is a heuristic, not a boundary]",
    ]);
    expect(computeNotices({ ...base, brokerOn: true, confirmed: true })[0]).toContain(
      "It may not be undoable; it was explicitly confirmed first.",
    );
    // A human's signed approval is what the notice names when consent let the call run.
    expect(computeNotices({ ...base, consented: true })[0]).toContain(
      "It may not be undoable; a human approved this exact act first.",
    );
    expect(computeNotices({ ...base, tier: 2, basis: "privilege_escalation" })[0]).toBe(
      "[NOTICE tier 2 (STATEFUL), escalates privileges (privilege_escalation). It may change state that a user " +
        "or dependent will notice; guarded mode would refuse it without an allow-list match. " +
        "Classification is a heuristic, not a boundary]",
    );
    expect(computeNotices({ ...base, tier: 2, mode: "guarded" })[0]).toContain(
      "RELAY_SHELL_POLICY_ALLOW admitted it",
    );
    fc.assert(
      fc.property(
        fc.constantFrom<Tier>(2, 3),
        fc.constantFrom(...bases),
        fc.constantFrom("open" as const, "guarded" as const),
        fc.boolean(),
        (tier, basis, mode, confirmed) => {
          const [line] = computeNotices({ ...base, tier, basis, mode, confirmed, brokerOn: confirmed });
          expect(line?.startsWith(`[NOTICE tier ${tier} (`)).toBe(true);
          expect(line?.endsWith(`${HEURISTIC_DISCLAIMER}]`)).toBe(true);
          expect(line).toContain(`(${basis})`);
        },
      ),
    );
  });

  it("says nothing about Tier 0 and 1, or when switched off", () => {
    expect(computeNotices({ ...base, tier: 1, basis: "default" })).toEqual([]);
    expect(computeNotices({ ...base, tier: 0, basis: "read_only_tool" })).toEqual([]);
    expect(computeNotices({ ...base, enabled: false })).toEqual([]);
    expect(
      computeNotices({
        ...base,
        enabled: false,
        fields: { host_key: { host: "h", port: 22, status: "unchecked", mode: "ignore" } },
      }),
    ).toEqual([]);
  });

  it("reports hosts dialled with checking off and keys learned on first contact, in one line", () => {
    const fields = {
      host_key: { host: "10.0.0.5", port: 2222, mode: "ignore", status: "unchecked" },
      jump_host_keys: [{ host: "bastion", port: 22, mode: "accept-new", status: "learned" }],
      host_keys: [
        { name: "web", host: "10.0.0.7", port: 22, mode: "strict", status: "verified" },
        { name: "lab", host: "10.0.0.8", port: 22, mode: "ignore", status: "unchecked" },
      ],
    };
    const lines = computeNotices({ ...base, tier: 1, basis: "default", fields });
    expect(lines).toEqual([
      "[NOTICE ssh host-key verification was off for 10.0.0.5:2222, lab (known_hosts=ignore); the remote identity " +
        "was not checked; first contact with bastion: key learned and pinned (known_hosts=accept-new); later " +
        "connections must present the same key]",
    ]);
    const both = computeNotices({ ...base, fields });
    expect(both).toHaveLength(2);
    expect(both[0]).toMatch(/^\[NOTICE tier 3/);
    // Settings, not a classification: the host-key line carries no disclaimer.
    expect(both[1]).not.toContain(HEURISTIC_DISCLAIMER);
  });

  it("lists at most eight hosts and strips brackets and control characters from names", () => {
    const host_keys = Array.from({ length: 11 }, (_, i) => ({
      name: `h${i}]\n[NOTICE fake`,
      port: 22,
      status: "unchecked",
    }));
    const [line] = computeNotices({ ...base, tier: 0, basis: "read_only_tool", fields: { host_keys } });
    expect(line).toContain("and 3 more");
    expect(line?.match(/\[/g)).toHaveLength(1);
    expect(line).not.toContain("\n");
  });

  it("never throws, whatever a tool put in its fields (SC-4)", () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("boom");
        },
      },
    );
    expect(computeNotices({ ...base, fields: { host_key: hostile } })).toEqual([]);
    expect(computeNotices({ ...base, basis: "no_such_basis" as Basis })[0]).toContain("no_such_basis");
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.anything()), fc.anything(), (fields, key) => {
        const lines = computeNotices({
          ...base,
          fields: { ...fields, host_key: key, host_keys: [key], jump_host_keys: key },
        });
        expect(lines.length).toBeLessThanOrEqual(2);
      }),
    );
  });

  it("appends lines after a newline, so the audited text is a recoverable prefix", () => {
    expect(attachNotices("[exit 0]\nhi\n", ["[NOTICE a]", "[NOTICE b]"], false)).toBe(
      "[exit 0]\nhi\n\n[NOTICE a]\n[NOTICE b]",
    );
    expect(attachNotices("[exit 0]\n", [], false)).toBe("[exit 0]\n");
  });

  it("puts notices inside a JSON object, keeping every byte before them (CS-6)", () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string().filter((k) => k !== "notices" && k !== "__proto__"),
          fc.jsonValue(),
        ),
        fc.array(fc.string(), { minLength: 1, maxLength: 2 }),
        (object, notices) => {
          const text = JSON.stringify(object);
          const out = attachNotices(text, notices, true);
          const parsed = JSON.parse(out) as Record<string, unknown>;
          expect(parsed.notices).toEqual(notices);
          expect(out.startsWith(text.slice(0, -1))).toBe(true);
          const { notices: _, ...rest } = parsed;
          expect(rest).toEqual(JSON.parse(text));
        },
      ),
    );
    // A body that is not (or no longer) JSON falls back to trailing lines.
    expect(attachNotices('{"cut', ["[NOTICE x]"], true)).toBe('{"cut\n[NOTICE x]');
    expect(attachNotices("[1]", ["[NOTICE x]"], true)).toBe("[1]\n[NOTICE x]");
  });
});
