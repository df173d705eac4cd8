export {
  type CallCounter,
  type CallLabels,
  type CallMetrics,
  type CallOutcome,
  type CallSeries,
  callKey,
  createCallCounter,
} from "./call-counter.js";
export {
  type ContractMetricsInput,
  escapeLabelValue,
  formatGaugeValue,
  type GaugeProviders,
  renderContractMetrics,
} from "./exposition.js";
export {
  createMetricsRegistry,
  METRICS_CONTENT_TYPE,
  type MetricsRegistry,
  type MetricsRegistryDeps,
  OTHER_TOOL,
} from "./prometheus.js";
