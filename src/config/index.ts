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
export type { AuditFormat, KnownHostsMode, PolicyMode, Settings } from "./types.js";
export { checkBindSafety, configWarnings } from "./warnings.js";
