export { createDiagnosticsTools, type DiagnosticsDeps, type RuntimeInfo } from "./diagnostics.js";
export { buildInstructions, buildOperatingGuide } from "./guide.js";
export { clampTimeout, createShellTools, joinProbe, type ShellToolDeps } from "./shell.js";
