import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_TAIL_LINES, tailAudit } from "./tail.js";
import { createAuditLog } from "./writer.js";

let dir: string;
let path: string;

function rec(i: number, tool: string, tier: number, denied: boolean): string {
  return JSON.stringify({
    ts: `t${i}`,
    tool,
    tier,
    denied,
    args: { i },
    output_sha256: "x",
    output_len: 1,
    exit_code: 0,
  });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-t-"));
  path = join(dir, "audit.jsonl");
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("tailAudit", () => {
  it("returns the last n non-blank lines, oldest first", () => {
    const lines = Array.from({ length: 10 }, (_, i) => rec(i, "shell_exec", 1, false));
    writeFileSync(path, `${lines.slice(0, 5).join("\n")}\n\n  \n${lines.slice(5).join("\n")}\n\n`);
    expect(tailAudit(path, { lines: 3 })).toBe(lines.slice(7).join("\n"));
    expect(tailAudit(path, { lines: 50 })).toBe(lines.join("\n"));
  });

  it("handles a last line without a newline and CRLF endings", () => {
    writeFileSync(path, "a\r\nb\r\nc");
    expect(tailAudit(path, { lines: 2 })).toBe("b\r\nc");
  });

  it("returns the raw lines unfiltered, non-JSON included", () => {
    writeFileSync(path, `${rec(1, "a", 0, false)}\nnot json\n`);
    expect(tailAudit(path, { lines: 5 })).toBe(`${rec(1, "a", 0, false)}\nnot json`);
  });

  it("filters within the window, dropping non-JSON lines only when filtering", () => {
    const lines = [
      rec(0, "shell_exec", 3, true),
      rec(1, "ssh_exec", 1, false),
      "garbage",
      rec(2, "shell_exec", 1, false),
      rec(3, "shell_exec", 3, true),
      "[1,2]",
      rec(4, "ssh_exec", 0, false),
    ];
    writeFileSync(path, `${lines.join("\n")}\n`);
    expect(tailAudit(path, { lines: 5, tool: "shell_exec" })).toBe([lines[3], lines[4]].join("\n"));
    expect(tailAudit(path, { lines: 7, tool: "shell_exec" })).toBe([lines[0], lines[3], lines[4]].join("\n"));
    expect(tailAudit(path, { lines: 7, tier: 3, denied: true })).toBe([lines[0], lines[4]].join("\n"));
    expect(tailAudit(path, { lines: 7, denied: false, tier: 0 })).toBe(lines[6]);
    expect(tailAudit(path, { lines: 7, tool: "shell" })).toBe("");
    // Empty tool and negative tier mean "any": unfiltered, raw lines.
    expect(tailAudit(path, { lines: 3, tool: "", tier: -1 })).toBe(lines.slice(4).join("\n"));
  });

  it("returns empty for a missing or empty file, n <= 0, or an unreadable path", () => {
    expect(tailAudit(join(dir, "missing"), { lines: 5 })).toBe("");
    writeFileSync(path, "");
    expect(tailAudit(path, { lines: 5 })).toBe("");
    writeFileSync(path, "\n\n\n");
    expect(tailAudit(path, { lines: 5 })).toBe("");
    writeFileSync(path, "a\n");
    expect(tailAudit(path, { lines: 0 })).toBe("");
    expect(tailAudit(path, { lines: -3 })).toBe("");
    expect(tailAudit(path, { lines: Number.NaN })).toBe("");
    mkdirSync(join(dir, "d"));
    expect(tailAudit(join(dir, "d"), { lines: 5 })).toBe("");
  });

  it("caps the window at 1000 lines and reads long files across chunk boundaries", () => {
    // ~1.3 MB spread over many 64 KiB chunks, with multi-byte characters at the seams.
    const lines = Array.from({ length: 3000 }, (_, i) => `${i} ${"\u00e9\u{1F600}x".repeat(50 + (i % 97))}`);
    writeFileSync(path, `${lines.join("\n")}\n`);
    const got = tailAudit(path, { lines: 5000 }).split("\n");
    expect(got).toHaveLength(MAX_TAIL_LINES);
    expect(got).toEqual(lines.slice(-MAX_TAIL_LINES));
    expect(tailAudit(path, { lines: 1 })).toBe(lines.at(-1));
  });

  it("never shows output bodies, and the log's tail() uses the same reader", () => {
    const log = createAuditLog(
      { path, format: "jsonl", chain: false, stderrEcho: false },
      { clock: { now: () => 0, monotonic: () => 0 } },
    );
    log.append({ tool: "shell_exec", tier: 1, denied: false, args: {}, output: "BODY-TEXT", exitCode: 0 });
    log.append({
      tool: "audit_tail",
      tier: 0,
      denied: false,
      args: { lines: 1 },
      output: "x",
      exitCode: null,
    });
    const all = log.tail({ lines: 10 });
    expect(all.split("\n")).toHaveLength(2);
    expect(all).not.toContain("BODY-TEXT");
    expect(JSON.parse(log.tail({ lines: 10, tool: "shell_exec" }))).toMatchObject({ tool: "shell_exec" });
    log.close();
  });
});
