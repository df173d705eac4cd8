import type { CallSeries } from "./call-counter.js";

/** Live values read at scrape time. A provider that throws is left out of that scrape. */
export interface GaugeProviders {
  activeSessions(): number;
  activeForwards(): number;
  auditDegraded(): boolean;
}

export interface ContractMetricsInput {
  calls: readonly CallSeries[];
  gauges: GaugeProviders;
  /** Reports a gauge provider that threw; the scrape goes on without it. */
  onGaugeError?: (name: string, err: unknown) => void;
}

interface Family {
  name: string;
  type: "counter" | "gauge";
  help: string;
}

const TOOL_CALLS: Family = {
  name: "relay_shell_tool_calls_total",
  type: "counter",
  help: "Tool calls, resource reads and prompt fetches by tool, tier, policy mode and outcome.",
};
const SECCOMP_EVENTS: Family = {
  name: "relay_shell_seccomp_notify_events_total",
  type: "counter",
  help: "Syscalls seen by the seccomp notify channel (not implemented in this build).",
};
const SECCOMP_OVERFLOW: Family = {
  name: "relay_shell_seccomp_notify_overflow_total",
  type: "counter",
  help: "Calls or sessions that hit the seccomp notify cap (not implemented in this build).",
};
const GAUGES: ReadonlyArray<Family & { read: (g: GaugeProviders) => number }> = [
  {
    name: "relay_shell_active_sessions",
    type: "gauge",
    help: "Live PTY sessions, local and SSH.",
    read: (g) => g.activeSessions(),
  },
  {
    name: "relay_shell_active_forwards",
    type: "gauge",
    help: "Live SSH port forwards.",
    read: (g) => g.activeForwards(),
  },
  {
    name: "relay_shell_audit_degraded",
    type: "gauge",
    help: "1 while the audit log cannot be written, else 0.",
    read: (g) => (g.auditDegraded() ? 1 : 0),
  },
];

/** Label values may carry a backslash, a double quote or a newline; each is escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Gauges print as floats (`0.0`, `7.0`, `0.25`), the way the Python exposition does. */
export function formatGaugeValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

function header(family: Family): string {
  return `# HELP ${family.name} ${family.help}\n# TYPE ${family.name} ${family.type}\n`;
}

function labelText(labels: Record<string, string>): string {
  const names = Object.keys(labels).sort();
  return names.map((name) => `${name}="${escapeLabelValue(labels[name] ?? "")}"`).join(",");
}

/**
 * The six metric families of docs/wire-contract.md §9.3, in the contract's exposition
 * order: counters first, then gauges; HELP and TYPE for every family even
 * without samples; labels and samples sorted; counters as integers, gauges
 * as floats; the body ends with a newline.
 */
export function renderContractMetrics(input: ContractMetricsInput): string {
  let text = header(TOOL_CALLS);
  const samples = input.calls
    .filter((series) => series.count > 0)
    .map((series) => {
      const labels = labelText({
        mode: series.labels.mode,
        outcome: series.labels.outcome,
        tier: String(series.labels.tier),
        tool: series.labels.tool,
      });
      return `${TOOL_CALLS.name}{${labels}} ${Math.trunc(series.count)}\n`;
    })
    .sort();
  text += samples.join("");
  // The seccomp channel is not built (docs/wire-contract.md §14.13): its families exist with nothing observed.
  text += header(SECCOMP_EVENTS);
  text += `${header(SECCOMP_OVERFLOW)}${SECCOMP_OVERFLOW.name} 0\n`;
  for (const gauge of GAUGES) {
    text += header(gauge);
    let value: number;
    try {
      value = gauge.read(input.gauges);
    } catch (err) {
      input.onGaugeError?.(gauge.name, err);
      continue;
    }
    text += `${gauge.name} ${formatGaugeValue(value)}\n`;
  }
  return text;
}
