export { canonicalJson, compactJson, JsonNumberText, pythonJson } from "./canonical-json.js";
export { type Clock, isoTimestamp, systemClock } from "./clock.js";
export { describeError, type ErrorType, RelayError } from "./errors.js";
export { cryptoIds, type Ids } from "./ids.js";
export { type Logger, silentLogger } from "./logger.js";
export { isLoopbackHost } from "./loopback.js";
export { fail, ok, type Result } from "./result.js";
export type { RunOutcome } from "./run-outcome.js";
export { isNonAsciiSeparator } from "./separators.js";
export {
  enableStageTrace,
  markStage,
  mergeStages,
  type StageRecord,
  type StageTimes,
  stageTraceEnabled,
  traceCall,
} from "./stage-trace.js";
export { holdTerminalEvents, type TerminalEvents } from "./terminal-events.js";
export {
  neutralizeTerminalOutput,
  openSequenceStart,
  TERMINAL_OUTPUT_MODES,
  type TerminalOutputMode,
} from "./terminal-output.js";
export { type Tier, tierName } from "./tier.js";
export { clamp, decodeUtf8, type Truncated, truncateUtf8, utf8Length } from "./truncate.js";
export { wildcardMatch } from "./wildcard.js";
