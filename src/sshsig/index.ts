export {
  type AllowedSigner,
  type AllowedSigners,
  parseAllowedSigners,
} from "./allowed-signers.js";
export type { SshsigFailure } from "./failure.js";
export { parsePublicKey, SSH_KEY_TYPES, type SshKeyType, type SshPublicKey } from "./keys.js";
export {
  type SshsigKeyMatch,
  type SshsigKeyVerdict,
  type SshsigMatch,
  type SshsigPolicy,
  type SshsigRefusal,
  type SshsigVerdict,
  verifySshsig,
  verifySshsigWithKey,
} from "./verify.js";
