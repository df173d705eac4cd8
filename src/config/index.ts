export { describeSettings } from "./describe.js";
export { type InfraEnvironment, readInfraEnvironment } from "./infra.js";
export {
  ConfigError,
  type LoadOptions,
  loadSettings,
  loadSettingsReport,
  type SettingsReport,
  snapshotEnvironment,
} from "./load.js";
export { compilePolicyRegex, POLICY_REGEX_FLAGS } from "./regex.js";
export { SETTING_ENV_NAMES } from "./schema.js";
export type { AuditFormat, KnownHostsMode, PolicyMode, Settings, Transport } from "./types.js";
export { checkBindSafety, configWarnings, type RuntimeInfo } from "./warnings.js";
