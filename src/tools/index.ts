export { createConfirmTool } from "./confirm.js";
export {
  type ConsentActs,
  createConsentActs,
} from "./consent-acts.js";
export { createDiagnosticsTools, type RuntimeInfo } from "./diagnostics.js";
export { buildInstructions, buildOperatingGuide } from "./guide.js";
export { createInfraTools } from "./infra.js";
export { createPolicyExplainTool, type ExplainCall } from "./policy-explain.js";
export { createSshResources } from "./resources.js";
export { createSessionTools } from "./sessions.js";
export { createShellTools } from "./shell.js";
export { createSshTools } from "./ssh.js";
export { createSshForwardTools } from "./ssh-forward.js";
export { createSshSpawnTools } from "./ssh-spawn.js";
export { createSshTransferTools } from "./ssh-transfer.js";
