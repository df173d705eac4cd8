export type { ConnectionOverrides, HostDirectory } from "./directory.js";
export { mapBounded } from "./fanout.js";
export {
  createFanoutResults,
  FANOUT_KEPT_BYTES,
  type FanoutResults,
  type KeptHostRun,
} from "./fanout-results.js";
export {
  createForwardRegistry,
  type ForwardRegistry,
} from "./forward-registry.js";
export { type ForwardSpec, parseForwardSpec } from "./forward-spec.js";
export type { HostKeyReport } from "./host-key.js";
export { toListing } from "./inventory.js";
export { createSshLayer } from "./layer.js";
export { openSshPty } from "./pty.js";
export type { SshService } from "./service.js";
export {
  type TransferDirection,
  transferFiles,
} from "./sftp-transfer.js";
export type { SshTarget } from "./target.js";
