export { createFollowUpVetter, type FollowUpVetter } from "./admission.js";
export { createConfirmGate } from "./confirm-gate.js";
export { clampOutput } from "./format.js";
export type { ArgsOf, ParamSpec, ParamTable } from "./params.js";
export { type CallContext, createRelay, type Relay, type RelayDeps, type RunResult } from "./relay.js";
export { outputSchemaFor, type StepSummary, type StructuredResult } from "./structured.js";
export {
  annotationsFor,
  type CallIdentity,
  defineTool,
  type Gate,
  type GateVerdict,
  type Tool,
  type ToolAnnotations,
  type ToolContext,
  type ToolDef,
  type ToolOutcome,
} from "./tool.js";
