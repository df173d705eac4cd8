import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { wildcardMatch } from "../core/index.js";
import {
  parseAllowedSigners,
  parseSignerTime,
  signerAllowsNamespace,
  signerAllowsPrincipal,
} from "./allowed-signers.js";
import { matchPatternList } from "./patterns.js";

const ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIlizSIN3DQV78VPNjVvvwjgf+P5HqbPYCYu3BOMdjAE";
const ED_FP = "SHA256:ZxTZQ/K7JZpz0mHqWqdmYCUcq3MAtnu9TYA66TCBkxM";

describe("parseAllowedSigners", () => {
  it("reads principals, options and the key; skips comments and blank lines; numbers lines from 1", () => {
    const text = [
      "# operators",
      "",
      `alice@example.com,bob@example.com ${ED} alice's laptop`,
      `   *@ops.example.com namespaces="relay-shell-consent,file" ${ED}`,
      `carol@example.com VALID-AFTER="20260101Z",valid-before="202701011230Z" ${ED}\r`,
      "\t# indented comment",
    ].join("\n");
    const { signers, problems } = parseAllowedSigners(text);
    expect(problems).toEqual([]);
    expect(signers.map((s) => [s.line, s.principals, s.namespaces, s.validAfter, s.validBefore])).toEqual([
      [3, "alice@example.com,bob@example.com", null, null, null],
      [4, "*@ops.example.com", "relay-shell-consent,file", null, null],
      [5, "carol@example.com", null, Date.UTC(2026, 0, 1) / 1000, Date.UTC(2027, 0, 1, 12, 30) / 1000],
    ]);
    expect(signers[0]?.key).toMatchObject({
      type: "ssh-ed25519",
      fingerprint: ED_FP,
      comment: "alice's laptop",
    });
  });

  it("takes quoted principals with spaces, and quoted option values with spaces and escaped quotes", () => {
    const { signers, problems } = parseAllowedSigners(
      `"ops team@example.com,x@y" namespaces="a b,c\\"d" ${ED}\n"solo@example.com" ${ED}`,
    );
    expect(problems).toEqual([]);
    expect(signers.map((s) => [s.principals, s.namespaces])).toEqual([
      ["ops team@example.com,x@y", 'a b,c"d'],
      ["solo@example.com", null],
    ]);
  });

  it("reports each bad line with its number and leaves it out", () => {
    const lines = [
      `ca@example.com cert-authority ${ED}`,
      `a@x namespaces=relay ${ED}`,
      `a@x valid-before="20261301" ${ED}`,
      `a@x valid-after="2026-01-01" ${ED}`,
      `a@x no-touch-required ${ED}`,
      `a@x frobnicate="1" ${ED}`,
      `a@x namespaces="a",namespaces="b" ${ED}`,
      `a@x namespaces="unterminated ${ED}`,
      "a@x ssh-dss AAAAB3NzaC1kc3MAAACBAP",
      "a@x ssh-ed25519-cert-v01@openssh.com AAAA",
      "a@x ssh-ed25519 not*base64",
      "a@x ssh-ed25519 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBN7LnfPBVdDfBT7KWUley1qo+rjzy0WYkrHpzbhGALXlj8g4K2bFmy81wblCbnHqWgjblv0FoBwUW641o9xEZtw=",
      "a@x",
      `"unterminated ${ED}`,
      `a@x,,b@x ${ED}`,
      `a@x namespaces="n" `,
      `a@x namespaces="n" valid-after="20260101" ${ED}`,
      `a@x valid-after="20260101Z",valid-before="20260101Z" ${ED}`,
    ];
    const { signers, problems } = parseAllowedSigners(lines.join("\n"));
    expect(signers).toEqual([]);
    expect(problems).toHaveLength(lines.length);
    expect(problems.map((p) => p.slice(0, p.indexOf(":")))).toEqual(lines.map((_, i) => `line ${i + 1}`));
    expect(problems[0]).toBe(
      "line 1: cert-authority lines are not supported (certificates are not accepted); this line never matches",
    );
    expect(problems[1]).toBe('line 2: option "namespaces" needs a quoted value (namespaces="…")');
    expect(problems[2]).toContain('valid-before="20261301" is not a time');
    expect(problems[3]).toContain('valid-after="2026-01-01" is not a time');
    expect(problems[4]).toBe('line 5: unknown option "no-touch-required"');
    expect(problems[5]).toBe('line 6: unknown option "frobnicate"');
    expect(problems[6]).toBe('line 7: option "namespaces" given twice');
    expect(problems[8]).toContain('unsupported key type "ssh-dss"');
    expect(problems[9]).toContain("certificate keys (ssh-ed25519-cert-v01@openssh.com) are not supported");
    expect(problems[10]).toBe("line 11: the ssh-ed25519 key is not valid base64");
    expect(problems[11]).toContain(
      "line 12: the line says ssh-ed25519 but the key inside is ecdsa-sha2-nistp256",
    );
    expect(problems[12]).toBe("line 13: no key after the principals");
    expect(problems[15]).toBe("line 16: no key after the options");
    expect(problems[17]).toBe(
      "line 18: valid-before is not later than valid-after, so the key is never valid",
    );
    expect(problems[16]).toBe(
      'line 17: "valid-after="20260101"" where the key type belongs (options are separated by commas, with no spaces)',
    );
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const out = parseAllowedSigners(`${text}\n${ED}\n${text} ${ED}`);
        expect(Array.isArray(out.signers) && Array.isArray(out.problems)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe("signer times", () => {
  it("reads the four forms, UTC with Z and local time without", () => {
    expect(parseSignerTime("20260102Z")).toBe(Date.UTC(2026, 0, 2) / 1000);
    expect(parseSignerTime("202601020304Z")).toBe(Date.UTC(2026, 0, 2, 3, 4) / 1000);
    expect(parseSignerTime("20260102030405Z")).toBe(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000);
    expect(parseSignerTime("20260102")).toBe(new Date(2026, 0, 2).getTime() / 1000);
    expect(parseSignerTime("20240229Z")).toBe(Date.UTC(2024, 1, 29) / 1000);
  });

  it("refuses dates that do not exist and other shapes", () => {
    for (const bad of [
      "20250229",
      "20260132",
      "20260001",
      "202601022400",
      "2026010203",
      "20260102T0304",
      "",
      "Z",
    ]) {
      expect(parseSignerTime(bad)).toBeNull();
    }
  });
});

describe("OpenSSH patterns", () => {
  it("matches * and ? and literal characters, case sensitively", () => {
    expect(wildcardMatch("*@example.com", "alice@example.com")).toBe(true);
    expect(wildcardMatch("?lice@*", "alice@example.com")).toBe(true);
    expect(wildcardMatch("*@EXAMPLE.com", "alice@example.com")).toBe(false);
    expect(wildcardMatch("*@example.com", "alice@example.com.evil")).toBe(false);
    expect(wildcardMatch("*", "")).toBe(true);
    expect(wildcardMatch("?", "")).toBe(false);
    expect(wildcardMatch("a*b*c*", "abc")).toBe(true);
    expect(wildcardMatch("relay-*", "relay-shell-consent")).toBe(true);
  });

  it("a negated match excludes, whatever order the list has", () => {
    expect(matchPatternList("eve@example.com", "*@example.com,!eve@example.com")).toBe(false);
    expect(matchPatternList("eve@example.com", "!eve@example.com,*@example.com")).toBe(false);
    expect(matchPatternList("bob@example.com", "!eve@example.com,*@example.com")).toBe(true);
    expect(matchPatternList("bob@example.com", "!eve@example.com")).toBe(false);
  });

  it("stays linear-ish on a hostile pattern", () => {
    const started = performance.now();
    expect(wildcardMatch(`${"*a".repeat(200)}b`, "a".repeat(5000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("agrees with a regular expression built from the pattern", () => {
    const alphabet = fc.constantFrom("a", "b", "*", "?", ".");
    fc.assert(
      fc.property(
        fc.string({ unit: alphabet, maxLength: 8 }),
        fc.string({ unit: fc.constantFrom("a", "b", "."), maxLength: 10 }),
        (pattern, text) => {
          const re = new RegExp(
            `^${pattern.replace(/\./g, "\\.").replace(/\*/g, ".*").replace(/\?/g, ".")}$`,
            "s",
          );
          expect(wildcardMatch(pattern, text)).toBe(re.test(text));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("is what a signer line's principals and namespaces mean", () => {
    const [signer] = parseAllowedSigners(
      `*@ops.example.com,!mallory@ops.example.com namespaces="relay-*" ${ED}`,
    ).signers;
    if (!signer) throw new Error("no signer");
    expect(signerAllowsPrincipal(signer, "ann@ops.example.com")).toBe(true);
    expect(signerAllowsPrincipal(signer, "mallory@ops.example.com")).toBe(false);
    expect(signerAllowsNamespace(signer, "relay-shell-consent")).toBe(true);
    expect(signerAllowsNamespace(signer, "file")).toBe(false);
  });
});
