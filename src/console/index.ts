// The operator console (docs/console.md): an edge like server/, wired only by cli/.

export {
  type ConsoleSettings,
  consoleOrigin,
  createOperatorConsole,
  type OperatorConsole,
} from "./console.js";
export { type EnrolOutcome, runEnrolment } from "./enrol.js";
export { type ConsoleHandler, type LoopbackListener, listenLoopback } from "./listen.js";
export type { Posture } from "./pages.js";
