import { createRequire } from "node:module";

// prom-client is only needed by the HTTP edge's /metrics: loaded on first use, not at start-up.
const requireFromHere = createRequire(import.meta.url);
const loadPromClient = () => requireFromHere("prom-client") as typeof import("prom-client");

import type { CallSeries } from "./call-counter.js";
import { type GaugeProviders, renderContractMetrics } from "./exposition.js";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Upper bounds in seconds: a `true` takes milliseconds, a long build the full 900 s clamp. */
const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900,
];

/** The label a call outside the known tool set is filed under, so clients cannot grow the series. */
const OTHER_TOOL = "unknown_tool";

export interface MetricsRegistryDeps {
  calls: { series(): CallSeries[] };
  gauges: GaugeProviders;
  /** The tool names a duration may be labelled with; anything else is counted as `unknown_tool`. */
  tools: readonly string[];
  onGaugeError?: (name: string, err: unknown) => void;
}

export interface MetricsRegistry {
  readonly contentType: string;
  /** Record how long one tool call took, end to end through the relay. */
  observeDuration(tool: string, seconds: number): void;
  /** The contract families, then the latency histograms and the process metrics. */
  render(): Promise<string>;
  close(): void;
}

/**
 * The /metrics body. The six contract families are rendered by hand because
 * their exposition rules (gauges as floats, fixed order) differ from
 * prom-client's; the per-tool latency histogram and the Node process metrics
 * come from a private prom-client registry appended after them.
 */
export function createMetricsRegistry(deps: MetricsRegistryDeps): MetricsRegistry {
  const { collectDefaultMetrics, Histogram, Registry } = loadPromClient();
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const known = new Set(deps.tools);
  const durations = new Histogram({
    name: "relay_shell_tool_call_duration_seconds",
    help: "Time from a tool call's arrival at the relay to its result, by tool.",
    labelNames: ["tool"],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  return {
    contentType: METRICS_CONTENT_TYPE,
    observeDuration(tool, seconds) {
      durations.observe({ tool: known.has(tool) ? tool : OTHER_TOOL }, Math.max(0, seconds));
    },
    async render() {
      const contract = renderContractMetrics({
        calls: deps.calls.series(),
        gauges: deps.gauges,
        ...(deps.onGaugeError ? { onGaugeError: deps.onGaugeError } : {}),
      });
      const rest = await registry.metrics();
      return rest.endsWith("\n") || rest === "" ? contract + rest : `${contract + rest}\n`;
    },
    close() {
      registry.clear();
    },
  };
}
