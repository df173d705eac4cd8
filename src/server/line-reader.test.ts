import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLineReader, describeOversized, type OversizedMessage } from "./line-reader.js";

function collect(max: number, keep: number) {
  const lines: string[] = [];
  const big: OversizedMessage[] = [];
  const reader = createLineReader(max, keep, { line: (l) => lines.push(l), oversized: (o) => big.push(o) });
  return { reader, lines, big };
}

describe("line reader", () => {
  it("splits lines across arbitrary chunk boundaries", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc
            .string({ minLength: 1, maxLength: 40 })
            .filter((s) => !s.includes("\n") && s.trim() !== "" && !s.endsWith("\r")),
          { maxLength: 20 },
        ),
        fc.array(fc.nat(50), { maxLength: 10 }),
        (lines, cuts) => {
          const data = Buffer.from(lines.map((l) => `${l}\n`).join(""), "utf8");
          const { reader, lines: out } = collect(1 << 20, 16);
          let at = 0;
          for (const cut of cuts) {
            reader.push(data.subarray(at, Math.min(data.length, at + cut)));
            at = Math.min(data.length, at + cut);
          }
          reader.push(data.subarray(at));
          expect(out).toEqual(lines);
        },
      ),
    );
  });

  it("reports an oversized line by its ends and size and stays in sync", () => {
    const { reader, lines, big } = collect(100, 8);
    reader.push(Buffer.from(`{"a":1}\nHEAD${"x".repeat(500)}`));
    reader.push(Buffer.from(`${"y".repeat(500)}TAIL\n{"b":2}\n`));
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
    expect(big).toHaveLength(1);
    expect(big[0]?.bytes).toBe(1008);
    expect(big[0]?.head.toString()).toBe("HEADxxxx");
    expect(big[0]?.tail.toString()).toBe("yyyyTAIL");
  });

  it("recovers the id, method and tool name of an oversized SDK request", () => {
    const message = JSON.stringify({
      method: "tools/call",
      params: { name: "shell_exec", arguments: { command: "x", stdin: "z".repeat(10_000) } },
      jsonrpc: "2.0",
      id: 42,
    });
    const { reader, big } = collect(1000, 200);
    reader.push(Buffer.from(`${message}\n`));
    expect(describeOversized(big[0] as OversizedMessage)).toEqual({
      id: 42,
      method: "tools/call",
      toolName: "shell_exec",
    });
  });
});
