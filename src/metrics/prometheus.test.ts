import { describe, expect, it } from "vitest";
import { createCallCounter } from "./call-counter.js";
import { createMetricsRegistry, METRICS_CONTENT_TYPE } from "./prometheus.js";

describe("createMetricsRegistry", () => {
  it("renders the contract families first, then per-tool latency histograms and process metrics", async () => {
    const calls = createCallCounter();
    calls.recordCall({ tool: "shell_exec", tier: 1, mode: "guarded", outcome: "ok" });
    const metrics = createMetricsRegistry({
      calls,
      gauges: { activeSessions: () => 2, activeForwards: () => 0, auditDegraded: () => false },
      tools: ["shell_exec", "server_info"],
    });
    metrics.observeDuration("shell_exec", 0.004);
    metrics.observeDuration("shell_exec", 2);
    metrics.observeDuration("not-a-tool\nreally", 0.1);
    const text = await metrics.render();
    metrics.close();

    expect(metrics.contentType).toBe(METRICS_CONTENT_TYPE);
    const firstProcess = text.indexOf("# HELP process_");
    expect(text.indexOf("relay_shell_audit_degraded 0.0")).toBeGreaterThan(0);
    expect(text.indexOf("relay_shell_audit_degraded 0.0")).toBeLessThan(text.indexOf("duration_seconds"));
    expect(firstProcess).toBeGreaterThan(0);
    expect(text).toContain(
      'relay_shell_tool_calls_total{mode="guarded",outcome="ok",tier="1",tool="shell_exec"} 1\n',
    );
    expect(text).toContain('relay_shell_tool_call_duration_seconds_bucket{le="0.005",tool="shell_exec"} 1\n');
    expect(text).toContain('relay_shell_tool_call_duration_seconds_count{tool="shell_exec"} 2\n');
    expect(text).toContain('relay_shell_tool_call_duration_seconds_count{tool="unknown_tool"} 1\n');
    expect(text).not.toContain("not-a-tool");
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(text).toMatch(/^process_resident_memory_bytes /m);
    expect(text.endsWith("\n")).toBe(true);
    // Every family is announced once.
    const types = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    expect(new Set(types).size).toBe(types.length);
  });
});
