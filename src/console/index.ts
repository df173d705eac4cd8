// The operator console (docs/console.md): an edge like server/, wired only by cli/.

export { createOperatorConsole, type OperatorConsole } from "./console.js";
export { runEnrolment } from "./enrol.js";
export { type LoopbackListener, listenLoopback } from "./listen.js";
/** @public What cli/ hands createOperatorConsole as `logins` (createPgLoginStore's, for several relays). */
export type { LoginStore } from "./logins.js";
export type { Posture } from "./pages.js";
export { passkeyNameProblem } from "./passkeys.js";
/** @public cli/ wires it when several relays share one database (src/state/shared-schema.ts). */
export { createPgLoginStore } from "./pg-logins.js";
