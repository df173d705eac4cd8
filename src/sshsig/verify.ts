import { createHash } from "node:crypto";
import { fail, ok, type Result } from "../core/index.js";
import { type AllowedSigner, signerAllowsNamespace, signerAllowsPrincipal } from "./allowed-signers.js";
import { SshsigError, type SshsigFailure } from "./failure.js";
import { decodeBase64, decodeKeyBlob, fingerprintOf, type SshKeyType, type SshPublicKey } from "./keys.js";
import { requireUserPresence, verifySignatureBlob } from "./signature.js";
import { WireReader, wireString } from "./wire.js";

const BEGIN = "-----BEGIN SSH SIGNATURE-----";
const END = "-----END SSH SIGNATURE-----";
const MAGIC = Buffer.from("SSHSIG", "latin1");
const VERSION = 1;
/** Characters: a 16384-bit RSA signature with its key is under 5 KB of armor, a WebAuthn one a few KB. */
const MAX_ARMOR = 64 * 1024;

/** A signature that verified for one key. */
interface SshsigKeyMatch {
  key: { fingerprint: string; type: SshKeyType };
  /** True only when a FIDO authenticator asserted that a user touched it; a plain key proves no presence. */
  userPresent: boolean;
  /** The FIDO authenticator's signature counter; absent for a plain key. */
  counter?: number;
}

interface SshsigRefusal {
  failure: SshsigFailure;
  /** What is wrong, in words, naming the key (fingerprint) or allowed-signers line when there is one. */
  reason: string;
}

export type SshsigKeyVerdict = Result<SshsigKeyMatch, SshsigRefusal>;

/** A signature that verified for an allowed signer. */
interface SshsigMatch extends SshsigKeyMatch {
  /** The identity given in `principal`, or else the principals field of the signer's line. */
  principal: string;
  /** The allowed-signers line that admitted the signature. */
  line: number;
}

export type SshsigVerdict = Result<SshsigMatch, SshsigRefusal>;

export interface SshsigPolicy {
  /** The namespace the signature must have been made in (`ssh-keygen -Y sign -n`). */
  namespace: string;
  signers: readonly AllowedSigner[];
  /** Epoch milliseconds, compared with `valid-after` / `valid-before`. */
  now: number;
  /** When given, the signer's principals must match this identity (`ssh-keygen -Y verify -I`). */
  principal?: string;
}

interface Envelope {
  keyBlob: Buffer;
  namespace: string;
  hashAlgorithm: "sha256" | "sha512";
  signature: Buffer;
}

function refusal(failure: SshsigFailure, reason: string): { ok: false; error: SshsigRefusal } {
  return fail({ failure, reason });
}

function dearmor(armored: string): Buffer {
  if (armored.length > MAX_ARMOR)
    throw new SshsigError("too-large", `the signature is over ${MAX_ARMOR} characters`);
  const text = armored.trim();
  if (!text.startsWith(BEGIN))
    throw new SshsigError("bad-armor", `the signature does not start with ${BEGIN}`);
  if (!text.endsWith(END)) throw new SshsigError("bad-armor", `the signature does not end with ${END}`);
  const body = text.slice(BEGIN.length, text.length - END.length).replace(/[ \t\r\n]/g, "");
  const raw = decodeBase64(body);
  if (raw === null) throw new SshsigError("bad-armor", "the signature's armor is not valid base64");
  return raw;
}

/** The binary signature (PROTOCOL.sshsig): magic, version, key, namespace, reserved, hash, signature. */
function parseEnvelope(raw: Buffer): Envelope {
  const r = new WireReader(raw, "signature");
  if (raw.length < MAGIC.length || !r.bytes(MAGIC.length).equals(MAGIC)) {
    throw new SshsigError("bad-armor", "the armored data is not an SSHSIG signature (no SSHSIG magic)");
  }
  const version = r.u32();
  if (version !== VERSION) {
    throw new SshsigError(
      "unsupported-version",
      `signature version ${version} is not supported (only ${VERSION})`,
    );
  }
  const keyBlob = r.string();
  const namespace = r.name("namespace");
  r.string(); // reserved: ignored, and signed as empty, as OpenSSH does
  const hashAlgorithm = r.name("hash algorithm");
  const signature = r.string();
  r.end();
  if (hashAlgorithm !== "sha256" && hashAlgorithm !== "sha512") {
    throw new SshsigError("unsupported-hash", `hash algorithm "${hashAlgorithm}" is not sha256 or sha512`);
  }
  return { keyBlob, namespace, hashAlgorithm, signature };
}

/** What the signer's key signed: the message's hash wrapped with the namespace (PROTOCOL.sshsig). */
function preimage(envelope: Envelope, message: Buffer): Buffer {
  return Buffer.concat([
    MAGIC,
    wireString(envelope.namespace),
    wireString(Buffer.alloc(0)),
    wireString(envelope.hashAlgorithm),
    wireString(createHash(envelope.hashAlgorithm).update(message).digest()),
  ]);
}

function asBytes(message: Buffer | string): Buffer {
  return typeof message === "string" ? Buffer.from(message, "utf8") : message;
}

/** Armor, structure, namespace, then the signature itself; throws SshsigError. */
function verifyEnvelope(
  armored: string,
  message: Buffer | string,
  namespace: string,
): { envelope: Envelope; match: SshsigKeyMatch } {
  if (typeof armored !== "string") throw new SshsigError("bad-armor", "the signature is not text");
  if (namespace === "") throw new SshsigError("wrong-namespace", "no namespace was given to verify against");
  const envelope = parseEnvelope(dearmor(armored));
  if (envelope.namespace !== namespace) {
    throw new SshsigError(
      "wrong-namespace",
      `the signature is for namespace "${envelope.namespace}", not "${namespace}"`,
    );
  }
  const key = decodeKeyBlob(envelope.keyBlob, "the signature's public key");
  const fingerprint = fingerprintOf(envelope.keyBlob);
  let verified: ReturnType<typeof verifySignatureBlob>;
  try {
    verified = verifySignatureBlob(key, envelope.signature, preimage(envelope, asBytes(message)));
    requireUserPresence(verified);
  } catch (err) {
    if (err instanceof SshsigError)
      throw new SshsigError(err.code, `${key.type} key ${fingerprint}: ${err.message}`);
    throw err;
  }
  const match: SshsigKeyMatch = {
    key: { fingerprint, type: key.type },
    userPresent: verified.sk !== undefined,
  };
  if (verified.sk !== undefined) match.counter = verified.sk.counter;
  return { envelope, match };
}

function contained<T>(work: () => Result<T, SshsigRefusal>): Result<T, SshsigRefusal> {
  try {
    return work();
  } catch (err) {
    if (err instanceof SshsigError) return refusal(err.code, err.message);
    // Nothing hostile input can do should land here; if it does, it is still a refusal, never a throw.
    return refusal(
      "malformed",
      `the signature could not be checked (${(err as Error)?.message ?? String(err)})`,
    );
  }
}

/**
 * Verifies an armored SSH signature (`ssh-keygen -Y sign`) over `message` in
 * `namespace` by one known key, with no allowed-signers policy: what
 * `ssh-keygen -Y check-novalidate` checks. Never throws.
 */
export function verifySshsigWithKey(
  armored: string,
  message: Buffer | string,
  namespace: string,
  key: SshPublicKey,
): SshsigKeyVerdict {
  return contained(() => {
    const { envelope, match } = verifyEnvelope(armored, message, namespace);
    if (!envelope.keyBlob.equals(key.blob)) {
      return refusal(
        "unknown-key",
        `the signature was made by ${match.key.fingerprint}, not by ${key.fingerprint}`,
      );
    }
    return ok(match);
  });
}

function formatTime(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.000Z$/, "Z");
}

/** Why one allowed-signers line does not admit the signature now, or null when it does. */
function lineRefusal(
  signer: AllowedSigner,
  policy: SshsigPolicy,
  fingerprint: string,
): { ok: false; error: SshsigRefusal } | null {
  const where = `key ${fingerprint} (allowed-signers line ${signer.line})`;
  if (policy.principal !== undefined && !signerAllowsPrincipal(signer, policy.principal)) {
    return refusal("principal-not-allowed", `${where} is not allowed for principal "${policy.principal}"`);
  }
  if (!signerAllowsNamespace(signer, policy.namespace)) {
    return refusal(
      "namespace-not-allowed",
      `${where} may sign only in namespaces "${signer.namespaces}", not "${policy.namespace}"`,
    );
  }
  const now = Math.floor(policy.now / 1000);
  if (signer.validAfter !== null && now < signer.validAfter) {
    return refusal("not-yet-valid", `${where} is not valid before ${formatTime(signer.validAfter)}`);
  }
  if (signer.validBefore !== null && now > signer.validBefore) {
    return refusal("expired", `${where} expired at ${formatTime(signer.validBefore)}`);
  }
  return null;
}

/**
 * Verifies an armored SSH signature over `message` against allowed signers,
 * as `ssh-keygen -Y verify` does: the armor and structure, the namespace,
 * the hash (sha256 or sha512), the signature by the key it names (with user
 * presence for FIDO keys), then the first allowed-signers line with that key
 * whose principals, `namespaces` and validity window admit it. Never throws;
 * a refusal names what failed.
 */
export function verifySshsig(armored: string, message: Buffer | string, policy: SshsigPolicy): SshsigVerdict {
  return contained(() => {
    if (!Number.isFinite(policy.now)) {
      // NaN would pass every validity comparison: no time, no verdict.
      return refusal(
        "bad-policy",
        "the time to check validity windows against is not a number of milliseconds",
      );
    }
    const { envelope, match } = verifyEnvelope(armored, message, policy.namespace);
    const lines = policy.signers.filter((s) => s.key.blob.equals(envelope.keyBlob));
    if (lines.length === 0) {
      return refusal(
        "unknown-key",
        `${match.key.type} key ${match.key.fingerprint} is not an allowed signer`,
      );
    }
    let first: { ok: false; error: SshsigRefusal } | null = null;
    for (const signer of lines) {
      const refused = lineRefusal(signer, policy, match.key.fingerprint);
      if (refused === null) {
        return ok({ ...match, principal: policy.principal ?? signer.principals, line: signer.line });
      }
      first ??= refused;
    }
    return first ?? refusal("unknown-key", "no allowed signer admits the signature");
  });
}
