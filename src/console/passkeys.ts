import {
  type Passkey as ConsentPasskey,
  loadPasskeys as loadConsentPasskeys,
  parsePasskeys as parseConsentPasskeys,
} from "../consent/index.js";
import { fail, ok, type Result } from "../core/index.js";

/** COSE algorithms a passkey of the console may use: ES256, EdDSA, RS256. */
export const PASSKEY_ALGORITHMS = [-7, -8, -257] as const;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** One operator passkey: a line of the passkeys file (docs/console.md). */
export interface Passkey {
  name: string;
  /** base64url of the credential id, as WebAuthn reports it. */
  credentialId: string;
  /** base64url of the COSE_Key. */
  publicKey: string;
  algorithm: number;
  transports: string[];
  created: string;
}

/** A passkeys file, read and checked: the keys, or every problem found. */
export type PasskeysRead = Result<Passkey[], string[]>;

/** The text of a valid operator name, for `console enrol --name`; null when it is valid. */
export function passkeyNameProblem(name: string): string | null {
  return NAME.test(name)
    ? null
    : "a passkey name is 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit";
}

/** Turn the reader's answer (or the problems it threw) into the console's shape. */
function read(load: () => { passkeys: ConsentPasskey[] }): PasskeysRead {
  try {
    return ok(
      load().passkeys.map((p) => ({
        name: p.name,
        credentialId: p.credentialId,
        publicKey: p.publicKeyCose,
        algorithm: p.algorithm,
        transports: p.transports,
        created: p.created,
      })),
    );
  } catch (err) {
    return fail([err instanceof Error ? err.message : String(err)]);
  }
}

/**
 * Parse the text of a passkeys file with the one reader of its format
 * (src/consent/passkeys.ts, which the consent gate's passkey channel uses
 * too): one JSON object a line, `#` comments and blank lines skipped.
 */
export function parsePasskeys(text: string, file: string): PasskeysRead {
  return read(() => parseConsentPasskeys(text, file));
}

/**
 * Read the operator's passkeys file for the relay running as `selfUid`. The
 * file is a trust anchor: one the relay's own account could rewrite would
 * let a compromised relay enrol its own passkey, so it is refused like an
 * allowed-signers file.
 */
export function loadPasskeys(path: string, selfUid: number): PasskeysRead {
  return read(() => loadConsentPasskeys(path, { selfUid }));
}

/** The line `console enrol` appends for a new passkey (no newline). */
export function passkeyLine(key: Passkey): string {
  return JSON.stringify({
    name: key.name,
    credential_id: key.credentialId,
    public_key: key.publicKey,
    algorithm: key.algorithm,
    transports: key.transports,
    created: key.created,
  });
}
