// The operator console (docs/console.md): an edge like server/, wired only by cli/.

export { createOperatorConsole, type OperatorConsole } from "./console.js";
export { runEnrolment } from "./enrol.js";
export { type LoopbackListener, listenLoopback } from "./listen.js";
export type { Posture } from "./pages.js";
export { passkeyNameProblem } from "./passkeys.js";
export { createPgLoginStore } from "./pg-logins.js";
