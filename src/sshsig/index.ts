export {
  type AllowedSigner,
  parseAllowedSigners,
  signerAllowsNamespace,
} from "./allowed-signers.js";

export { parsePublicKey, type SshPublicKey } from "./keys.js";
export {
  verifySshsig,
  verifySshsigWithKey,
} from "./verify.js";
