export { createDiagnosticsTools, type DiagnosticsDeps, type RuntimeInfo } from "./diagnostics.js";
export { buildInstructions, buildOperatingGuide } from "./guide.js";
export { createSshResources, type SshResource } from "./resources.js";
export { createSessionTools, type SessionToolDeps } from "./sessions.js";
export { clampTimeout, createShellTools, joinProbe, type ShellToolDeps } from "./shell.js";
export { createSshTools } from "./ssh.js";
export type { SshToolDeps } from "./ssh-common.js";
