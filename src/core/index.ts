export { canonicalJson, compactJson, JsonNumberText, pythonJson } from "./canonical-json.js";
export { type Clock, isoTimestamp, systemClock } from "./clock.js";
export { describeError, ERROR_TYPES, type ErrorType, isErrorType, RelayError } from "./errors.js";
export { foldHosts } from "./host-ranges.js";
export { cryptoIds, type Ids } from "./ids.js";
export {
  FOLLOW_UP_MS,
  KILL_GRACE_MS,
  LAUNCHER_CLOSE_DEADLINE_MS,
  MAX_OUTPUT_BYTES,
  MAX_REQUEST_FRAME_BYTES,
  MAX_TIMER_MS,
  PIPE_GRACE_MS,
  REAP_WAIT_MS,
  WALK_LIMIT,
} from "./limits.js";
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
