export { createFollowUpVetter } from "./admission.js";
export { createConfirmGate } from "./confirm-gate.js";
export { createConsentGate } from "./consent-gate.js";
export { fanoutShare, PER_HOST_FANOUT } from "./fanout.js";
export { clampOutput, hostFailureText } from "./format.js";
export { createRelay, type Relay } from "./relay.js";
export type { ResourceDef } from "./resource.js";
export { outputSchemaFor } from "./structured.js";
export {
  annotationsFor,
  type CallHost,
  type CallScope,
  commandOutcome,
  defineTool,
  type Gate,
  type TierFloor,
  type Tool,
  type ToolContext,
  type ToolOutcome,
} from "./tool.js";
