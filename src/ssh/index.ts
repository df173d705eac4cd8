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
export { MAX_CONNECTIONS_PER_FORWARD } from "./forward.js";
export {
  createForwardRegistry,
  type ForwardInfo,
  type ForwardRegistry,
  type ForwardRegistryConfig,
  type ForwardRegistryDeps,
  type OpenedForward,
  type OpenForwardRequest,
} from "./forward-registry.js";
export {
  destinationText,
  type ForwardDestination,
  type ForwardKind,
  type ForwardSpec,
  parseForwardSpec,
} from "./forward-spec.js";
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
export {
  type OpenedSshPty,
  openSshPty,
  type PtyEvents,
  type SshPtyRequest,
  type SshPtyTransport,
  TERMINAL_TYPE,
} from "./pty.js";
export { createSshService, type SshRunRequest, type SshRunResult, type SshService } from "./service.js";
export { type CopyStats, MAX_SKIPPED } from "./sftp.js";
export {
  type TransferDeps,
  type TransferDirection,
  type TransferRequest,
  type TransferResult,
  transferFiles,
} from "./sftp-transfer.js";
export { loadSshConfig, parseSshConfig, type SshConfigFile, type SshConfigOptions } from "./ssh-config.js";
export { endpointText, type SshTarget, targetKey } from "./target.js";
export { MAX_TRANSFER_DEPTH, type TransferLimits } from "./transfer-limits.js";
