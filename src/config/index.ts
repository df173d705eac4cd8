export { consoleOrigin } from "./console.js";
export { describeSettings } from "./describe.js";
export { type InfraEnvironment, readInfraEnvironment } from "./infra.js";
export {
  ConfigError,
  launcherBinaryFromEnv,
  loadSettings,
  loadSettingsReport,
  type SettingsReport,
  snapshotEnvironment,
} from "./load.js";
export { loadPolicyFile, type PolicyFile } from "./policy-file.js";
export { type PolicyLayer, parsePolicyLayer, tagNameProblem } from "./policy-layer.js";
export type { AuditFormat, ConsentLeaseMode, KnownHostsMode, PolicyMode, Settings } from "./types.js";
export { checkBindSafety, configWarnings } from "./warnings.js";
