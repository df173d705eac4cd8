import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { formatFanout } from "./fanout.js";
import { type FanoutHostRun, formatGrouped, groupRuns } from "./fanout-groups.js";

const ran = (host: string, output: string, exitCode: number | null = 0): FanoutHostRun => ({
  host,
  result: { exitCode, output, timedOut: false, droppedBytes: 0, totalBytes: Buffer.byteLength(output) },
});
const name = (i: number) => `web${String(i).padStart(3, "0")}`;
const header = {
  command: "uptime",
  concurrency: 64,
  timeout: 30,
  host_count: 0,
  fanout_id: "fo-0123456789ab",
};

interface GroupedBody {
  host_count: number;
  fanout_id: string;
  groups: Array<{ hosts: string; host_count: number; exit_code: number | null; output: string }>;
  failures: Array<{ error: string; hosts: string; host_count: number; message: string }>;
  groups_omitted?: number;
  omitted_hosts?: string;
}

describe("groupRuns", () => {
  it("files hosts a policy refused or held by kind and policy, each with its own reason (docs/policy.md)", () => {
    const prod = new RelayError(
      "PolicyDenied",
      "policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)",
      {
        code: "tag:prod",
      },
    );
    const db = new RelayError("PolicyDenied", "policy host:db1: matched deny[0] of host:db1", {
      code: "host:db1",
    });
    const staging = new RelayError(
      "PolicyHeld",
      "policy tag:staging holds it for signed consent: run it on these hosts in a call of their own",
      {
        code: "tag:staging",
      },
    );
    const runs: FanoutHostRun[] = [
      { host: "prod1", error: prod },
      ran("lab1", "ok\n"),
      { host: "db1", error: db },
      { host: "prod2", error: prod },
      { host: "staging1", error: staging },
    ];
    expect(groupRuns(runs, 30, "safe").failures).toEqual([
      {
        error: "PolicyDenied tag:prod",
        hosts: ["prod1", "prod2"],
        message: "[DENIED: policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]",
      },
      {
        error: "PolicyDenied host:db1",
        hosts: ["db1"],
        message: "[DENIED: policy host:db1: matched deny[0] of host:db1]",
      },
      {
        error: "PolicyHeld tag:staging",
        hosts: ["staging1"],
        message:
          "[HELD: policy tag:staging holds it for signed consent: run it on these hosts in a call of their own]",
      },
    ]);
  });

  it("groups identical output and exit status, largest first, and failures by kind", () => {
    const runs = [
      ran(name(1), "a\n"),
      ran(name(2), "b\n"),
      ran(name(3), "a\n"),
      ran(name(4), "a\n", 1),
      { host: name(5), error: new RelayError("ConnectionError", "refused") },
      {
        host: name(6),
        result: { exitCode: null, output: "", timedOut: true, droppedBytes: 0, totalBytes: 0 },
      },
      { host: name(7), error: new RelayError("ConnectionError", "reset") },
      ran(name(8), "b\n"),
      ran(name(9), "a\n"),
    ];
    const grouped = groupRuns(runs, 30, "raw");
    expect(grouped.groups.map((g) => [g.hosts, g.exitCode, g.output])).toEqual([
      [[name(1), name(3), name(9)], 0, "a\n"],
      [[name(2), name(8)], 0, "b\n"],
      [[name(4)], 1, "a\n"],
    ]);
    expect(grouped.failures).toEqual([
      {
        error: "ConnectionError",
        hosts: [name(5), name(7)],
        message: "[UNREACHABLE: ConnectionError: refused]",
      },
      { error: "TIMEOUT", hosts: [name(6)], message: "[TIMEOUT after 30s]" },
    ]);
  });

  it("tells apart outputs whose kept bytes agree but whose hosts wrote different amounts", () => {
    const cut = (host: string, total: number): FanoutHostRun => ({
      host,
      result: {
        exitCode: 0,
        output: "x".repeat(10),
        timedOut: false,
        droppedBytes: total - 10,
        totalBytes: total,
      },
    });
    expect(groupRuns([cut("a1", 50), cut("a2", 60), cut("a3", 50)], 30, "raw").groups).toHaveLength(2);
  });

  it("neutralizes terminal sequences in the shown output and counts what it removed", () => {
    const grouped = groupRuns(
      [ran("h1", "\u001b]0;title\u0007ok"), ran("h2", "\u001b]0;title\u0007ok")],
      30,
      "safe",
    );
    expect(grouped.groups[0]?.output).not.toContain("\u001b");
    expect(grouped.terminalRemoved).toBeGreaterThan(0);
  });
});

describe("formatGrouped", () => {
  it("names each group's hosts in ranges and keeps every failure kind", () => {
    const runs = [...Array.from({ length: 40 }, (_, i) => ran(name(i + 1), "ok\n")), ran(name(42), "ok\n")];
    runs.push({ host: "db1", error: new RelayError("ConnectionError", "refused") });
    const body = JSON.parse(formatGrouped(header, groupRuns(runs, 30, "raw"), 65536)) as GroupedBody;
    expect(body.groups).toEqual([
      { hosts: "web[001-040,042]", host_count: 41, exit_code: 0, output: "ok\n" },
    ]);
    expect(body.failures).toEqual([
      {
        error: "ConnectionError",
        hosts: "db1",
        host_count: 1,
        message: "[UNREACHABLE: ConnectionError: refused]",
      },
    ]);
    expect(body.groups_omitted).toBeUndefined();
  });

  it("stays parseable within the budget and accounts for every host, whatever the outputs (property)", () => {
    const output = fc.oneof(fc.string({ maxLength: 3000 }), fc.constantFrom("same\n", "\u0001".repeat(4000)));
    fc.assert(
      fc.property(
        fc.array(output, { minLength: 1, maxLength: 400 }),
        fc.integer({ min: 4096, max: 70000 }),
        (outs, limit) => {
          const runs = outs.map((out, i) => ran(name(i), out, i % 3));
          const text = formatGrouped(
            { ...header, host_count: runs.length },
            groupRuns(runs, 30, "raw"),
            limit,
          );
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(limit);
          const body = JSON.parse(text) as GroupedBody;
          const counted = body.groups.reduce((sum, g) => sum + g.host_count, 0);
          const shown = new Set(body.groups.map((g) => g.hosts));
          expect(shown.size).toBe(body.groups.length);
          if (counted < runs.length) expect(body.groups_omitted).toBeGreaterThan(0);
          else expect(body.groups_omitted).toBeUndefined();
        },
      ),
      { numRuns: 60 },
    );
  });

  it("omits the smallest groups, never a larger one, when they cannot all be shown", () => {
    const runs = Array.from({ length: 600 }, (_, i) => ran(name(i), i < 300 ? "common\n" : `only ${i}\n`));
    const body = JSON.parse(formatGrouped(header, groupRuns(runs, 30, "raw"), 8192)) as GroupedBody;
    expect(body.groups[0]).toMatchObject({ hosts: "web[000-299]", host_count: 300, output: "common\n" });
    expect(body.groups_omitted).toBeGreaterThan(0);
    expect(body.groups.length + (body.groups_omitted ?? 0)).toBe(301);
    expect(body.omitted_hosts).toMatch(/^web\[\d{3}-599\]$/);
  });
});

describe("formatFanout", () => {
  it("keeps a result per host, with the fan-out id, up to 100 hosts and groups past them", () => {
    const fanout = (n: number) => ({
      id: "fo-0123456789ab",
      command: "true",
      concurrency: 8,
      timeout: 30,
      hosts: Array.from({ length: n }, (_, i) => ran(name(i), "same\n")),
    });
    const small = JSON.parse(formatFanout(fanout(100), 65536, "raw").body) as Record<string, unknown>;
    expect(Object.keys(small)).toEqual([
      "command",
      "concurrency",
      "timeout",
      "host_count",
      "fanout_id",
      "results",
    ]);
    const large = JSON.parse(formatFanout(fanout(101), 65536, "raw").body) as GroupedBody;
    expect(large.groups).toEqual([
      { hosts: "web[000-100]", host_count: 101, exit_code: 0, output: "same\n" },
    ]);
    expect(large).toMatchObject({ host_count: 101, fanout_id: "fo-0123456789ab", failures: [] });
  });
});
