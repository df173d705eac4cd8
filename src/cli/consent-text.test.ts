import { describe, expect, it } from "vitest";
import type { ConsentRequest } from "../consent/index.js";
import { listLines, requestLine, visible } from "./consent-text.js";

const request = (bound: Record<string, unknown>): ConsentRequest => ({
  id: "0123456789",
  nonce: "0".repeat(32),
  actDigest: "0".repeat(64),
  act: { tool: "shell_exec", tier: 2, bound },
  basis: "write",
  session: "a-long-mcp-session-identifier",
  clientId: "c",
  createdAt: 0,
  expiresAt: 90_500,
  status: "pending",
  payload: "{}",
});

describe("what the consent CLI shows an operator", () => {
  it("keeps readable text, tabs and newlines, and escapes what a terminal would act on", () => {
    expect(visible("héllo 日本\tok\n")).toBe("héllo 日本\tok\n");
    for (const c of [
      "\u001b",
      "\u0007",
      "\r",
      "\u007f",
      "\u009b",
      "\u202e",
      "\u2066",
      "\u200b",
      "\u2028",
      "\ufeff",
    ]) {
      const shown = visible(`a${c}b`);
      expect(shown).toBe(`a\\u{${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}}b`);
    }
  });

  it("puts a request on one line with a summary of at most 60 characters", () => {
    const line = requestLine(request({ command: `printf 'x'\n${"y".repeat(200)}` }), 0);
    expect(line).not.toContain("\n");
    expect(line).toMatch(
      /^0123456789 {2}pending {3}shell_exec {2}tier 2 {2}expires in 91s {2}session a-long-mcp-s…/,
    );
    const summary = line.split("  ").at(-1) ?? "";
    expect(summary.length).toBeLessThanOrEqual(60);
    expect(summary).toBe("printf 'x' …");
  });

  it("lists requests by session with counts, and one act asked many times on one line", () => {
    const ask = (
      id: string,
      session: string,
      digest: string,
      status: ConsentRequest["status"] = "pending",
    ) => ({
      ...request({ command: `touch ${digest}` }),
      id,
      session,
      actDigest: digest.repeat(64).slice(0, 64),
      status,
    });
    const lines = listLines(
      [
        ask("a000000001", "s1", "a"),
        ask("a000000002", "s1", "a"),
        ask("a000000003", "s1", "a"),
        ask("b000000001", "s1", "b", "approved"),
        ask("c000000001", "s2", "c"),
      ],
      0,
    );
    expect(lines[0]).toBe("session s1  client c  3 pending, 1 approved");
    expect(lines[1]).toMatch(/^ {2}a000000003 {2}pending .* {2}\(x3, also a000000001 a000000002\)$/);
    expect(lines[2]).toMatch(/^ {2}b000000001 {2}approved/);
    expect(lines[3]).toBe("session s2  client c  1 pending, 0 approved");
    expect(lines).toHaveLength(5);
  });
});
