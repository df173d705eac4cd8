export {
  type CallCounter,
  type CallMetrics,
  type CallOutcome,
  type CallSeries,
  createCallCounter,
} from "./call-counter.js";
export type { GaugeProviders } from "./exposition.js";
export {
  createMetricsRegistry,
  type MetricsRegistry,
} from "./prometheus.js";
