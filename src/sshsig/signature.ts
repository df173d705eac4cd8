import { constants, createHash, type KeyObject, type VerifyKeyObjectInput, verify } from "node:crypto";
import { SshsigError } from "./failure.js";
import type { DecodedKey, EcCurve } from "./keys.js";
import { WireReader, wireU32 } from "./wire.js";

/** What a signature that verified says about how it was made. */
export interface VerifiedSignature {
  /** The FIDO authenticator's flags and counter; absent for a plain key. */
  sk?: { flags: number; counter: number };
}

/** Flags of a FIDO assertion (CTAP2 authenticator data; OpenSSH PROTOCOL.u2f). */
const SK_USER_PRESENT = 0x01;
const SK_ATTESTED_DATA = 0x40;
const SK_EXTENSION_DATA = 0x80;

const WEBAUTHN_TYPE = "webauthn-sk-ecdsa-sha2-nistp256@openssh.com";

function sha256(data: Buffer): Buffer {
  return createHash("sha256").update(data).digest();
}

function refuse(): never {
  throw new SshsigError("bad-signature", "the signature does not verify");
}

function cryptoVerify(
  hash: string | null,
  data: Buffer,
  key: KeyObject | VerifyKeyObjectInput,
  signature: Buffer,
): boolean {
  try {
    return verify(hash, data, key, signature);
  } catch {
    // node:crypto throws on signatures it cannot even decode; to a verifier that is a bad signature.
    return false;
  }
}

/** r and s as mpints in a string → the fixed-width r ‖ s (ieee-p1363) node:crypto takes. */
function ecdsaRs(blob: Buffer, curve: EcCurve): Buffer {
  const r = new WireReader(blob, "ECDSA signature");
  const parts = [r.mpint("r"), r.mpint("s")];
  r.end();
  const out = Buffer.alloc(2 * curve.size);
  for (const [i, part] of parts.entries()) {
    if (part.length === 0 || part.length > curve.size) refuse();
    part.copy(out, (i + 1) * curve.size - part.length);
  }
  return out;
}

function ed25519Signature(r: WireReader): Buffer {
  const sig = r.string();
  if (sig.length !== 64) {
    throw new SshsigError("malformed", `an Ed25519 signature is 64 bytes, not ${sig.length}`);
  }
  return sig;
}

/**
 * The bytes a FIDO authenticator signed for OpenSSH (PROTOCOL.u2f):
 * sha256(application) ‖ flags ‖ counter ‖ extensions ‖ sha256(message).
 * For a plain sk signature `extensions` is empty and `message` is the data
 * signed; for the WebAuthn form it is the client data JSON.
 */
export function skSignedData(
  application: Buffer,
  flags: number,
  counter: number,
  extensions: Buffer,
  message: Buffer,
): Buffer {
  return Buffer.concat([
    sha256(application),
    Buffer.of(flags & 0xff),
    wireU32(counter),
    extensions,
    sha256(message),
  ]);
}

/**
 * The client data OpenSSH accepts for a WebAuthn signature must begin with
 * the type, the challenge (the data signed, base64url) and the origin, in
 * this order and exactly this spelling; a browser may append fields after.
 */
function webauthnClientData(
  data: Buffer,
  origin: string,
  clientData: Buffer,
  flags: number,
  exts: Buffer,
): void {
  if (origin.includes('"')) throw new SshsigError("malformed", "the WebAuthn origin contains a quote");
  if ((flags & SK_ATTESTED_DATA) !== 0) {
    throw new SshsigError("malformed", "the WebAuthn assertion carries attested credential data");
  }
  if (((flags & SK_EXTENSION_DATA) !== 0) !== exts.length > 0) {
    throw new SshsigError("malformed", "the WebAuthn extension flag disagrees with the extension data");
  }
  const expected = Buffer.from(
    `{"type":"webauthn.get","challenge":"${data.toString("base64url")}","origin":"${origin}"`,
    "utf8",
  );
  if (clientData.length < expected.length || !clientData.subarray(0, expected.length).equals(expected)) {
    throw new SshsigError(
      "bad-signature",
      "the WebAuthn client data does not carry this signature's challenge",
    );
  }
}

/**
 * Verifies an SSH signature blob (`string algorithm ‖ string signature ‖ …`)
 * by `key` over `data`. Throws an SshsigError with the reason when it does
 * not verify; the user-presence flag of a FIDO signature is reported, not
 * judged, here (see {@link requireUserPresence}).
 */
export function verifySignatureBlob(key: DecodedKey, sigBlob: Buffer, data: Buffer): VerifiedSignature {
  const r = new WireReader(sigBlob, "signature blob");
  const algorithm = r.name("signature algorithm");
  const mismatch = () =>
    new SshsigError("unsupported-type", `a ${algorithm} signature does not belong to a ${key.type} key`);
  switch (key.type) {
    case "ssh-ed25519": {
      if (algorithm !== key.type) throw mismatch();
      const sig = ed25519Signature(r);
      r.end();
      if (!cryptoVerify(null, data, key.key, sig)) refuse();
      return {};
    }
    case "ecdsa-sha2-nistp256":
    case "ecdsa-sha2-nistp384":
    case "ecdsa-sha2-nistp521": {
      if (algorithm !== key.type) throw mismatch();
      const rs = ecdsaRs(r.string(), key.curve);
      r.end();
      if (!cryptoVerify(key.curve.hash, data, { key: key.key, dsaEncoding: "ieee-p1363" }, rs)) refuse();
      return {};
    }
    case "ssh-rsa": {
      if (algorithm === "ssh-rsa") {
        throw new SshsigError("unsupported-type", "RSA signatures over SHA-1 (ssh-rsa) are refused");
      }
      if (algorithm !== "rsa-sha2-256" && algorithm !== "rsa-sha2-512") throw mismatch();
      const raw = r.string();
      r.end();
      if (raw.length === 0 || raw.length > key.modulusBytes) refuse();
      // OpenSSH accepts a signature shorter than the modulus (its leading zeros dropped); OpenSSL wants it full width.
      const sig = Buffer.alloc(key.modulusBytes);
      raw.copy(sig, key.modulusBytes - raw.length);
      const hash = algorithm === "rsa-sha2-256" ? "sha256" : "sha512";
      if (!cryptoVerify(hash, data, { key: key.key, padding: constants.RSA_PKCS1_PADDING }, sig)) refuse();
      return {};
    }
    case "sk-ssh-ed25519@openssh.com": {
      if (algorithm !== key.type) throw mismatch();
      const sig = ed25519Signature(r);
      const flags = r.byte();
      const counter = r.u32();
      r.end();
      const signed = skSignedData(key.application, flags, counter, Buffer.alloc(0), data);
      if (!cryptoVerify(null, signed, key.key, sig)) refuse();
      return { sk: { flags, counter } };
    }
    case "sk-ecdsa-sha2-nistp256@openssh.com": {
      if (algorithm !== key.type && algorithm !== WEBAUTHN_TYPE) throw mismatch();
      const rs = ecdsaRs(r.string(), key.curve);
      const flags = r.byte();
      const counter = r.u32();
      let signed: Buffer;
      if (algorithm === WEBAUTHN_TYPE) {
        const origin = r.name("WebAuthn origin");
        const clientData = r.string();
        const extensions = r.string();
        r.end();
        webauthnClientData(data, origin, clientData, flags, extensions);
        signed = skSignedData(key.application, flags, counter, extensions, clientData);
      } else {
        r.end();
        signed = skSignedData(key.application, flags, counter, Buffer.alloc(0), data);
      }
      if (!cryptoVerify("sha256", signed, { key: key.key, dsaEncoding: "ieee-p1363" }, rs)) refuse();
      return { sk: { flags, counter } };
    }
  }
}

/**
 * A FIDO signature counts only when the authenticator says a user was
 * present (touched it): without that flag, malware holding the token could
 * sign without the human. Plain keys carry no such claim and pass.
 */
export function requireUserPresence(verified: VerifiedSignature): void {
  if (verified.sk !== undefined && (verified.sk.flags & SK_USER_PRESENT) === 0) {
    throw new SshsigError(
      "no-user-presence",
      "the FIDO signature was made without user presence (the authenticator was not touched)",
    );
  }
}
