export {
  type AllowedSigner,
  type AllowedSigners,
  parseAllowedSigners,
} from "./allowed-signers.js";
export type { SshsigFailure } from "./failure.js";
export { parsePublicKey, type SshKeyType, type SshPublicKey } from "./keys.js";
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
