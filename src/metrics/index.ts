export {
  type CallCounter,
  type CallLabels,
  type CallMetrics,
  type CallOutcome,
  callKey,
  createCallCounter,
} from "./call-counter.js";
