import { describe, expect, it } from "vitest";
import { parseAuditFilter } from "./audit-view.js";

describe("the audit page's filter query", () => {
  it("reads every filter field, blank ones as absent", () => {
    expect(
      parseAuditFilter({
        tool: "ssh_exec",
        tier: "3",
        outcome: "denied",
        denied: "true",
        client: "claude",
        host: "web-1",
        since: "2026-12-01T10:00:00Z",
        until: "2026-12-01T11:00:00.000Z",
      }),
    ).toEqual({
      ok: true,
      value: {
        tool: "ssh_exec",
        tier: 3,
        outcome: "denied",
        denied: true,
        client: "claude",
        host: "web-1",
        since: Date.parse("2026-12-01T10:00:00Z"),
        until: Date.parse("2026-12-01T11:00:00Z"),
      },
    });
    expect(parseAuditFilter({ tool: "  ", denied: "false" })).toEqual({ ok: true, value: { denied: false } });
  });

  it("refuses what it cannot read instead of showing everything", () => {
    const error = (q: Record<string, string>) => {
      const parsed = parseAuditFilter(q);
      return parsed.ok ? null : parsed.error;
    };
    expect(error({ tier: "4" })).toMatch(/^tier:/);
    expect(error({ tier: "1.0" })).toMatch(/^tier:/);
    expect(error({ outcome: "fine" })).toMatch(/^outcome:/);
    expect(error({ denied: "yes" })).toMatch(/^denied:/);
    expect(error({ since: "yesterday" })).toMatch(/^since:/);
    expect(error({ since: "2026-12-01T11:00:00Z", until: "2026-12-01T10:00:00Z" })).toMatch(/before until/);
    expect(error({ tool: "x".repeat(257) })).toMatch(/^tool:/);
    expect(error({ command: "rm" })).toBe('unknown filter "command"');
  });
});
