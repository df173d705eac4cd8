import { describe, expect, it } from "vitest";
import { createCallCounter } from "./call-counter.js";
import {
  escapeLabelValue,
  formatGaugeValue,
  type GaugeProviders,
  renderContractMetrics,
} from "./exposition.js";

const gauges = (over: Partial<GaugeProviders> = {}): GaugeProviders => ({
  activeSessions: () => 0,
  activeForwards: () => 0,
  auditDegraded: () => false,
  ...over,
});

const FAMILIES = [
  "relay_shell_tool_calls_total",
  "relay_shell_seccomp_notify_events_total",
  "relay_shell_seccomp_notify_overflow_total",
  "relay_shell_active_sessions",
  "relay_shell_active_forwards",
  "relay_shell_audit_degraded",
];

describe("renderContractMetrics", () => {
  it("prints HELP then TYPE for all six families in contract order, even with no samples", () => {
    const text = renderContractMetrics({ calls: [], gauges: gauges() });
    const typed = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(typed).toEqual([
      "relay_shell_tool_calls_total counter",
      "relay_shell_seccomp_notify_events_total counter",
      "relay_shell_seccomp_notify_overflow_total counter",
      "relay_shell_active_sessions gauge",
      "relay_shell_active_forwards gauge",
      "relay_shell_audit_degraded gauge",
    ]);
    for (const name of FAMILIES) {
      const help = text.indexOf(`# HELP ${name} `);
      expect(help, name).toBeGreaterThanOrEqual(0);
      expect(text.indexOf(`# TYPE ${name} `)).toBeGreaterThan(help);
    }
    expect(text.endsWith("\n")).toBe(true);
    expect(text).toContain("\nrelay_shell_active_sessions 0.0\n");
    expect(text).toContain("\nrelay_shell_audit_degraded 0.0\n");
    expect(text).not.toMatch(/^relay_shell_tool_calls_total\{/m);
  });

  it("renders counts with sorted labels and sorted samples, integers for counters, floats for gauges", () => {
    const counter = createCallCounter();
    counter.recordCall({ tool: "shell_exec", tier: 2, mode: "open", outcome: "ok" });
    counter.recordCall({ tool: "shell_exec", tier: 2, mode: "open", outcome: "ok" });
    counter.recordCall({ tool: "audit_tail", tier: 0, mode: "open", outcome: "ok" });
    counter.recordCall({ tool: "shell_exec", tier: 3, mode: "open", outcome: "denied" });
    const text = renderContractMetrics({
      calls: counter.series(),
      gauges: gauges({ activeSessions: () => 7, auditDegraded: () => true }),
    });
    const samples = text.split("\n").filter((l) => l.startsWith("relay_shell_tool_calls_total{"));
    expect(samples).toEqual([
      'relay_shell_tool_calls_total{mode="open",outcome="denied",tier="3",tool="shell_exec"} 1',
      'relay_shell_tool_calls_total{mode="open",outcome="ok",tier="0",tool="audit_tail"} 1',
      'relay_shell_tool_calls_total{mode="open",outcome="ok",tier="2",tool="shell_exec"} 2',
    ]);
    expect(text).toContain("\nrelay_shell_active_sessions 7.0\n");
    expect(text).toContain("\nrelay_shell_audit_degraded 1.0\n");
    expect(text).toContain("\nrelay_shell_seccomp_notify_overflow_total 0\n");
  });

  it("escapes backslash, quote and newline in label values", () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const text = renderContractMetrics({
      calls: [{ labels: { tool: 'x"y\nz\\', tier: 1, mode: "open", outcome: "error" }, count: 1 }],
      gauges: gauges(),
    });
    expect(text).toContain('tool="x\\"y\\nz\\\\"} 1\n');
    expect(text.split("\n").filter((l) => l.startsWith("relay_shell_tool_calls_total{"))).toHaveLength(1);
  });

  it("skips a gauge whose provider throws but keeps its HELP/TYPE and the rest of the scrape", () => {
    const seen: string[] = [];
    const text = renderContractMetrics({
      calls: [],
      gauges: gauges({
        activeForwards: () => {
          throw new Error("registry gone");
        },
        activeSessions: () => 3,
      }),
      onGaugeError: (name) => seen.push(name),
    });
    expect(seen).toEqual(["relay_shell_active_forwards"]);
    expect(text).toContain("# TYPE relay_shell_active_forwards gauge\n# HELP relay_shell_audit_degraded");
    expect(text).not.toMatch(/^relay_shell_active_forwards /m);
    expect(text).toContain("\nrelay_shell_active_sessions 3.0\n");
    expect(text).toContain("\nrelay_shell_audit_degraded 0.0\n");
  });

  it("formats gauge values as floats", () => {
    expect(formatGaugeValue(0)).toBe("0.0");
    expect(formatGaugeValue(12)).toBe("12.0");
    expect(formatGaugeValue(0.25)).toBe("0.25");
    expect(formatGaugeValue(Number.NaN)).toBe("NaN");
  });
});
