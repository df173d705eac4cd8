import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { foldFollowUps, hasFollowUps, opHash, opKey, tokenFingerprint } from "./op-key.js";

describe("operation identity", () => {
  it("is policy text, NUL, canonical JSON of the raw audit args", () => {
    expect(opKey("rm -rf x", { cwd: "/b", command: "rm -rf x" })).toBe(
      'rm -rf x\0{"command":"rm -rf x","cwd":"/b"}',
    );
    // Key order does not matter; values do.
    const a = opHash({ tool: "ssh_exec", policyText: "p", auditArgs: { host: "h", user: "a" } });
    const b = opHash({ tool: "ssh_exec", policyText: "p", auditArgs: { user: "a", host: "h" } });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });

  it("changes with every SSH identity field (ADR 0009)", () => {
    const base = {
      host: "web",
      command: "rm -rf /srv/x",
      user: "",
      port: 0,
      key_path: "",
      jump: "",
      known_hosts: "strict",
    };
    const hash = (args: Record<string, unknown>) =>
      opHash({ tool: "ssh_exec", policyText: "rm -rf /srv/x\nweb", auditArgs: args });
    const seen = new Set([hash(base)]);
    for (const change of [
      { host: "db" },
      { user: "root" },
      { port: 2222 },
      { key_path: "/root/.ssh/id_ed25519" },
      { jump: "bastion" },
      { known_hosts: "ignore" },
    ]) {
      seen.add(hash({ ...base, ...change }));
    }
    expect(seen.size).toBe(7);
  });

  it("cannot be forged by moving bytes between the tool, the text and the args", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), fc.string(), (t1, p1, t2, p2) => {
        fc.pre(t1 !== t2 || p1 !== p2);
        fc.pre(!t1.includes("\0") && !t2.includes("\0"));
        const x = opHash({ tool: t1, policyText: p1, auditArgs: {} });
        const y = opHash({ tool: t2, policyText: p2, auditArgs: {} });
        expect(x).not.toBe(y);
      }),
    );
  });

  it("folds the follow-ups into the armed identity", () => {
    const plan = { verifyCommand: "v", rollbackCommand: "r", verifyExpect: "", autoRollback: true };
    const h = "ab".repeat(32);
    expect(foldFollowUps(h, plan)).toBe(foldFollowUps(h, { ...plan }));
    expect(foldFollowUps(h, plan)).not.toBe(foldFollowUps(h, { ...plan, rollbackCommand: "r2" }));
    expect(foldFollowUps(h, plan)).not.toBe(foldFollowUps(h, { ...plan, autoRollback: false }));
    expect(foldFollowUps(h, plan)).not.toBe(foldFollowUps(h, null));
    expect(hasFollowUps(null)).toBe(false);
    expect(
      hasFollowUps({ verifyCommand: "", rollbackCommand: "", verifyExpect: "", autoRollback: false }),
    ).toBe(false);
    expect(hasFollowUps({ ...plan, verifyCommand: "" })).toBe(true);
  });

  it("fingerprints a token one-way in 12 hex characters", () => {
    expect(tokenFingerprint("")).toBe("");
    expect(tokenFingerprint("abc")).toBe("ba7816bf8f01");
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (token) => {
        const fp = tokenFingerprint(token);
        expect(fp).toMatch(/^[0-9a-f]{12}$/);
        if (token.length >= 12) expect(fp).not.toContain(token);
      }),
    );
  });
});
