export type { ConnectionOverrides, HostDirectory } from "./directory.js";
export { mapBounded } from "./fanout.js";
export {
  createForwardRegistry,
  type ForwardInfo,
  type ForwardRegistry,
  type ForwardRegistryConfig,
  type ForwardRegistryDeps,
  type OpenedForward,
  type OpenForwardRequest,
} from "./forward-registry.js";
export { type ForwardKind, type ForwardSpec, parseForwardSpec } from "./forward-spec.js";
export type { HostKeyReport, HostKeyStatus } from "./host-key.js";
export { type HostListing, type HostSpec, toListing } from "./inventory.js";
export { createSshLayer, type SshLayerDeps } from "./layer.js";
export {
  type OpenedSshPty,
  openSshPty,
  type PtyEvents,
  type SshPtyRequest,
  type SshPtyTransport,
} from "./pty.js";
export type { SshRunRequest, SshRunResult, SshService } from "./service.js";
export {
  type TransferDeps,
  type TransferDirection,
  type TransferRequest,
  type TransferResult,
  transferFiles,
} from "./sftp-transfer.js";
export type { SshTarget } from "./target.js";
