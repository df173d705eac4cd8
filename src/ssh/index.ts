export type { AuthConfig } from "./auth.js";
export { createDialer, type DialDeps, type Dialed, type Dialer, type DialOptions } from "./dial.js";
export {
  type ConnectionOverrides,
  createHostDirectory,
  type HostDirectory,
  type HostDirectoryConfig,
  parseModeArg,
} from "./directory.js";
export { translateDialError } from "./errors.js";
export { execRemote, type RemoteExecRequest, type RemoteOutcome } from "./exec.js";
export { mapBounded } from "./fanout.js";
export { HOST_KEY_ERROR, type HostKeyReport, type HostKeyStatus, MODE_STRENGTH } from "./host-key.js";
export {
  type HostListing,
  type HostSource,
  type HostSpec,
  loadInventory,
  parseInventory,
  toListing,
} from "./inventory.js";
export {
  fingerprintOf,
  formatHashedHost,
  formatKnownHostsLine,
  knownHostsName,
  parseKnownHosts,
} from "./known-hosts.js";
export {
  createKnownHostsStore,
  type KnownHostsStore,
  type KnownHostsStoreConfig,
} from "./known-hosts-store.js";
export { createSshLayer, type SshLayerDeps } from "./layer.js";
export {
  type AcquireOptions,
  createSshPool,
  type SshLease,
  type SshPool,
  type SshPoolConfig,
  type SshPoolDeps,
  type SshPoolStats,
} from "./pool.js";
export { createSshService, type SshRunRequest, type SshRunResult, type SshService } from "./service.js";
export { loadSshConfig, parseSshConfig, type SshConfigFile, type SshConfigOptions } from "./ssh-config.js";
export { endpointText, type SshTarget, targetKey } from "./target.js";
