import { constants, createHash, verify as cryptoVerify, timingSafeEqual } from "node:crypto";
import { statSync } from "node:fs";
import { fail, ok, type Result } from "../core/index.js";
import { trustAnchorProblems } from "../files/index.js";
import type { PasskeyCounters } from "./passkey-counters.js";
import { fromBase64url, loadPasskeys, type Passkey } from "./passkeys.js";
import type { ApprovalVerifier } from "./verifier.js";

/** Where the relay's passkeys are used: the console's WebAuthn relying party. */
export interface PasskeyVerifierConfig {
  /** The uid the relay runs as: it must not be able to write the passkeys file. */
  selfUid: number;
  /** The WebAuthn relying-party id (a host name, "localhost" on loopback). */
  rpId: string;
  /** The console's exact origin, scheme and port included (`https://relay.example:8443`). */
  origin: string;
  counters: PasskeyCounters;
}

/** The proof a passkey approval stores (docs/consent.md, "The passkey channel"): each field base64url. */
interface PasskeyProof {
  credentialId: string;
  authenticatorData: Buffer;
  clientDataJson: Buffer;
  signature: Buffer;
}

/** A proof is a few hundred bytes; anything far larger is refused before it is parsed. */
const MAX_PROOF_CHARS = 64 * 1024;

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
/** rpIdHash (32) ‖ flags (1) ‖ signCount (4). */
const AUTH_DATA_MIN = 37;

/**
 * The WebAuthn challenge of a consent approval: the 32 bytes of
 * sha256(payload), base64url as clientDataJSON carries it. The signature
 * is then over what the human was shown, not over a random number.
 */
export function passkeyChallenge(payload: string): string {
  return createHash("sha256").update(payload, "utf8").digest("base64url");
}

function sha256(data: Buffer | string): Buffer {
  return createHash("sha256").update(data).digest();
}

function parseProof(text: string): PasskeyProof | string {
  if (text.length > MAX_PROOF_CHARS) return `the proof is over ${MAX_PROOF_CHARS} characters`;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return "the proof is not JSON";
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return "the proof is not a JSON object";
  const o = raw as Record<string, unknown>;
  const field = (name: string): Buffer | string => {
    const value = o[name];
    const bytes = typeof value === "string" ? fromBase64url(value) : null;
    return bytes ?? `the proof's ${name} is not base64url`;
  };
  const id = field("credential_id");
  const authenticatorData = field("authenticator_data");
  const clientDataJson = field("client_data_json");
  const signature = field("signature");
  for (const f of [id, authenticatorData, clientDataJson, signature]) if (typeof f === "string") return f;
  const handle = o.user_handle;
  if (
    handle !== null &&
    handle !== undefined &&
    (typeof handle !== "string" || fromBase64url(handle) === null)
  ) {
    return "the proof's user_handle is neither null nor base64url";
  }
  return {
    credentialId: o.credential_id as string,
    authenticatorData: authenticatorData as Buffer,
    clientDataJson: clientDataJson as Buffer,
    signature: signature as Buffer,
  };
}

/** Why clientDataJSON does not describe this approval, or null when it does. */
function clientDataProblem(bytes: Buffer, challenge: string, origin: string): string | null {
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return "clientDataJSON is not UTF-8 JSON";
  }
  if (typeof data !== "object" || data === null || Array.isArray(data))
    return "clientDataJSON is not an object";
  const c = data as Record<string, unknown>;
  if (c.type !== "webauthn.get")
    return `clientDataJSON type is ${JSON.stringify(c.type)}, not "webauthn.get"`;
  if (c.challenge !== challenge) return "the assertion's challenge is not the digest of this act's payload";
  if (c.origin !== origin)
    return `the assertion was made at origin ${JSON.stringify(c.origin)}, not ${origin}`;
  if (c.crossOrigin !== undefined && c.crossOrigin !== false)
    return "the assertion was made in a cross-origin frame";
  if (c.topOrigin !== undefined) return "the assertion was made in an embedded frame (topOrigin)";
  return null;
}

function signatureVerifies(passkey: Passkey, signed: Buffer, signature: Buffer): boolean {
  try {
    switch (passkey.algorithm) {
      case -7:
        return cryptoVerify("sha256", signed, { key: passkey.publicKey, dsaEncoding: "der" }, signature);
      case -8:
        return cryptoVerify(null, signed, passkey.publicKey, signature);
      case -257:
        return cryptoVerify(
          "sha256",
          signed,
          { key: passkey.publicKey, padding: constants.RSA_PKCS1_PADDING },
          signature,
        );
    }
  } catch {
    // A malformed signature (bad DER, wrong length) is a signature that does not verify.
    return false;
  }
}

function stampOf(path: string): string {
  const st = statSync(path);
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** An assertion that verified: the passkey that made it, its sign counter, and its digest. */
interface Checked {
  passkey: Passkey;
  counter: number;
  assertion: string;
}

/** Where the enrolled passkeys come from: by credential id, or why none can be trusted now. */
export interface PasskeySource {
  current(): Map<string, Passkey> | string;
}

/**
 * The operator's passkeys file as a source: checked and read here (a
 * problem throws, so start-up fails) and read again, with the same checks,
 * whenever it changes; whether it is still safe is checked on every use.
 * Deleting a line revokes that passkey on the next approval; a file that
 * became unsafe refuses every approval until fixed.
 */
function fileSource(path: string, selfUid: number): PasskeySource {
  let stamp = stampOf(path);
  let byId = index(loadPasskeys(path, { selfUid }).passkeys);
  return {
    current() {
      try {
        // Approvals are rare and the check is a few stat calls: a directory above the file that
        // became writable changes nothing in the file's own stamp, so it is checked every time.
        const unsafe = trustAnchorProblems(path, { selfUid });
        if (unsafe.length > 0) throw new Error(unsafe.join("; "));
        const now = stampOf(path);
        if (now !== stamp) {
          byId = index(loadPasskeys(path, { selfUid }).passkeys);
          stamp = now;
        }
        return byId;
      } catch (err) {
        return `the passkeys file cannot be trusted now: ${err instanceof Error ? err.message : String(err)}`;
      }
    },
  };
}

/**
 * The verifier of approvals given with a passkey in the operator console
 * (docs/adr/0027-passkeys-as-a-consent-channel.md), over the operator's
 * passkeys file. It checks the assertion as a WebAuthn relying party would
 * (the type, the challenge = sha256 of the payload, the origin, the rpId
 * hash, user presence and verification, the signature, the sign counter)
 * with node:crypto only. Throws when the file cannot be trusted at start;
 * `verify` never throws.
 */
export function createPasskeyVerifier(path: string, config: PasskeyVerifierConfig): ApprovalVerifier {
  return passkeyVerifierOver(fileSource(path, config.selfUid), config);
}

/** The passkey verifier over any source of enrolled passkeys (the file, or a test's table). */
export function passkeyVerifierOver(
  source: PasskeySource,
  config: Omit<PasskeyVerifierConfig, "selfUid">,
): ApprovalVerifier {
  const rpIdHash = sha256(config.rpId);

  function check(proofText: string, payload: string): Result<Checked, string> {
    const proof = parseProof(proofText);
    if (typeof proof === "string") return fail(proof);
    const byId = source.current();
    if (typeof byId === "string") return fail(byId);
    const passkey = byId.get(proof.credentialId);
    if (!passkey) {
      return fail(
        `credential ${proof.credentialId.slice(0, 43)} is not in the passkeys file (never enrolled or revoked)`,
      );
    }
    const client = clientDataProblem(proof.clientDataJson, passkeyChallenge(payload), config.origin);
    if (client) return fail(client);
    const auth = proof.authenticatorData;
    if (auth.length < AUTH_DATA_MIN) return fail("authenticatorData is too short");
    if (!timingSafeEqual(auth.subarray(0, 32), rpIdHash)) {
      return fail(`the assertion is not for relying party ${config.rpId}`);
    }
    const flags = auth[32] ?? 0;
    if ((flags & FLAG_UP) === 0) return fail("the authenticator did not see the user (UP unset)");
    if ((flags & FLAG_UV) === 0) {
      return fail("the authenticator did not verify the user (UV unset)");
    }
    const signed = Buffer.concat([auth, sha256(proof.clientDataJson)]);
    if (!signatureVerifies(passkey, signed, proof.signature)) {
      return fail(`the signature does not verify with passkey ${passkey.name}`);
    }
    return ok({
      passkey,
      counter: auth.readUInt32BE(33),
      // One credential's assertion over these exact bytes; the signature itself may be randomized.
      assertion: createHash("sha256").update(`${passkey.credentialId}\n`).update(signed).digest("hex"),
    });
  }

  return {
    async verify(approval, payload) {
      if (approval.channel !== "passkey") {
        return fail(`an approval given by ${approval.channel} is not a passkey assertion`);
      }
      const checked = check(approval.proof, payload);
      if (!checked.ok) return checked;
      const { passkey, counter, assertion } = checked.value;
      try {
        // Passkeys that always report 0 are not compared (many synced passkeys keep no counter).
        const counted = await config.counters.countAssertion(passkey.credentialId, counter, assertion);
        if (!counted.accepted) {
          return fail(
            `the sign counter of passkey ${passkey.name} did not increase (${counter}, last seen ${counted.last}): a copy of the authenticator may be in use`,
          );
        }
      } catch (err) {
        return fail(
          `the passkey sign counters cannot be used: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      return ok({ signer: passkey.name, key: `passkey:${passkey.credentialId}`, channel: "passkey" });
    },
  };
}

function index(passkeys: Passkey[]): Map<string, Passkey> {
  return new Map(passkeys.map((p) => [p.credentialId, p]));
}
