import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { RelayError } from "../core/index.js";
import { SshsigError } from "./failure.js";
import { WireReader } from "./wire.js";

/** The public key algorithms a signer may use. */
const SSH_KEY_TYPES = [
  "ssh-ed25519",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "ssh-rsa",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
] as const;

export type SshKeyType = (typeof SSH_KEY_TYPES)[number];

/** An OpenSSH public key: its wire blob (what a signature names) and how `ssh-keygen -l` shows it. */
export interface SshPublicKey {
  type: SshKeyType;
  blob: Buffer;
  /** `SHA256:` and the unpadded base64 of sha256(blob), as `ssh-keygen -l` prints it. */
  fingerprint: string;
  /** The text after the key on its line; "" when there is none. */
  comment: string;
}

export interface EcCurve {
  /** The curve's name inside the key blob. */
  name: "nistp256" | "nistp384" | "nistp521";
  jwk: "P-256" | "P-384" | "P-521";
  /** Bytes of one coordinate, and of r and s in a signature. */
  size: number;
  /** The hash ECDSA uses with this curve (RFC 5656 §6.2.1). */
  hash: "sha256" | "sha384" | "sha512";
}

const CURVES: Record<EcCurve["name"], EcCurve> = {
  nistp256: { name: "nistp256", jwk: "P-256", size: 32, hash: "sha256" },
  nistp384: { name: "nistp384", jwk: "P-384", size: 48, hash: "sha384" },
  nistp521: { name: "nistp521", jwk: "P-521", size: 66, hash: "sha512" },
};

/** A key blob decoded into what node:crypto verifies with. */
export type DecodedKey =
  | { type: "ssh-ed25519"; key: KeyObject }
  | { type: "ssh-rsa"; key: KeyObject; modulusBytes: number }
  | {
      type: "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp521";
      key: KeyObject;
      curve: EcCurve;
    }
  | { type: "sk-ssh-ed25519@openssh.com"; key: KeyObject; application: Buffer }
  | { type: "sk-ecdsa-sha2-nistp256@openssh.com"; key: KeyObject; curve: EcCurve; application: Buffer };

/** OpenSSH refuses RSA moduli under 1024 bits and over 16384 (SSH_RSA_MINIMUM_MODULUS_SIZE, SSHBUF_MAX_BIGNUM). */
const RSA_MIN_BITS = 1024;
const RSA_MAX_BITS = 16384;

/** Longest key line accepted: a 16384-bit RSA key is about 2.8 KB of base64. */
const MAX_KEY_LINE = 16 * 1024;

function isSupportedKeyType(type: string): type is SshKeyType {
  return (SSH_KEY_TYPES as readonly string[]).includes(type);
}

/** Why a key algorithm is not accepted, in words. */
function unsupportedKeyReason(type: string): string {
  if (type.includes("-cert-v01@openssh.com")) {
    return `certificate keys (${type}) are not supported; list the signer's own key`;
  }
  return `unsupported key type "${type}" (supported: ${SSH_KEY_TYPES.join(", ")})`;
}

export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

function b64url(bytes: Buffer): string {
  return bytes.toString("base64url");
}

function importKey(jwk: Record<string, string>, what: string): KeyObject {
  try {
    return createPublicKey({ key: jwk, format: "jwk" });
  } catch (err) {
    // OpenSSL refuses points off the curve and malformed parameters here.
    throw new SshsigError("malformed", `${what} is not a valid key (${(err as Error).message})`);
  }
}

function ecPoint(
  r: WireReader,
  typeCurve: EcCurve["name"],
  what: string,
): { key: KeyObject; curve: EcCurve } {
  const curveName = r.name("curve name");
  if (curveName !== typeCurve) {
    throw new SshsigError(
      "malformed",
      `${what}: curve ${curveName} does not match the key type's ${typeCurve}`,
    );
  }
  const curve = CURVES[typeCurve];
  const q = r.string();
  if (q.length !== 1 + 2 * curve.size || q[0] !== 0x04) {
    throw new SshsigError("malformed", `${what}: the point is not an uncompressed ${curve.jwk} point`);
  }
  const key = importKey(
    {
      kty: "EC",
      crv: curve.jwk,
      x: b64url(q.subarray(1, 1 + curve.size)),
      y: b64url(q.subarray(1 + curve.size)),
    },
    what,
  );
  return { key, curve };
}

function ed25519Key(r: WireReader, what: string): KeyObject {
  const pk = r.string();
  if (pk.length !== 32)
    throw new SshsigError("malformed", `${what}: an Ed25519 key is 32 bytes, not ${pk.length}`);
  return importKey({ kty: "OKP", crv: "Ed25519", x: b64url(pk) }, what);
}

function application(r: WireReader, what: string): Buffer {
  const app = r.string();
  if (app.includes(0))
    throw new SshsigError("malformed", `${what}: the FIDO application contains a NUL byte`);
  return app;
}

/**
 * Decodes a public key blob, refusing trailing bytes, unknown algorithms,
 * certificates and keys OpenSSH itself would refuse.
 */
export function decodeKeyBlob(blob: Buffer, what = "public key"): DecodedKey {
  const r = new WireReader(blob, what);
  const type = r.name("key type");
  if (!isSupportedKeyType(type)) throw new SshsigError("unsupported-type", unsupportedKeyReason(type));
  let decoded: DecodedKey;
  switch (type) {
    case "ssh-ed25519":
      decoded = { type, key: ed25519Key(r, what) };
      break;
    case "sk-ssh-ed25519@openssh.com": {
      const key = ed25519Key(r, what);
      decoded = { type, key, application: application(r, what) };
      break;
    }
    case "ecdsa-sha2-nistp256":
    case "ecdsa-sha2-nistp384":
    case "ecdsa-sha2-nistp521": {
      const curveName = type.slice("ecdsa-sha2-".length) as EcCurve["name"];
      decoded = { type, ...ecPoint(r, curveName, what) };
      break;
    }
    case "sk-ecdsa-sha2-nistp256@openssh.com": {
      const point = ecPoint(r, "nistp256", what);
      decoded = { type, ...point, application: application(r, what) };
      break;
    }
    case "ssh-rsa": {
      const e = r.mpint("RSA exponent");
      const n = r.mpint("RSA modulus");
      const bits = n.length === 0 ? 0 : (n.length - 1) * 8 + (32 - Math.clz32(n[0] ?? 0));
      if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) {
        throw new SshsigError(
          "unsupported-type",
          `${what}: an RSA modulus of ${bits} bits is outside ${RSA_MIN_BITS}..${RSA_MAX_BITS}`,
        );
      }
      // An exponent of 1 makes every padded hash its own signature; OpenSSL caps e at 64 bits.
      const small = e.length === 1 && (e[0] ?? 0) < 3;
      if (e.length === 0 || small || e.length > 8 || ((e[e.length - 1] ?? 0) & 1) === 0) {
        throw new SshsigError(
          "malformed",
          `${what}: the RSA exponent is not an odd number from 3 to 64 bits`,
        );
      }
      decoded = {
        type,
        key: importKey({ kty: "RSA", n: b64url(n), e: b64url(e) }, what),
        modulusBytes: n.length,
      };
      break;
    }
  }
  r.end();
  return decoded;
}

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Strict base64: Buffer.from skips characters it does not know and ignores
 * the spare bits of the last group, so two texts could carry one signature;
 * like OpenSSH, only the canonical text of the bytes is accepted.
 */
export function decodeBase64(text: string): Buffer | null {
  if (text.length === 0 || !STRICT_BASE64.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : null;
}

function keyError(message: string): RelayError {
  return new RelayError("ValueError", message, { code: "SSH_PUBLIC_KEY_INVALID" });
}

/**
 * Parses one OpenSSH public key line, `type base64 [comment]` (the form of a
 * `.pub` file). The key inside must be well formed and of the type the line
 * names. Throws a `ValueError` saying what is wrong otherwise.
 */
export function parsePublicKey(text: string): SshPublicKey {
  if (text.length > MAX_KEY_LINE) throw keyError(`a public key line is at most ${MAX_KEY_LINE} characters`);
  const line = text.trim();
  if (line.includes("\n")) throw keyError("a public key is one line");
  const match = /^(\S+)\s+(\S+)(?:\s+(.*))?$/.exec(line);
  if (!match) throw keyError('a public key line reads "type base64 [comment]"');
  const [, type = "", body = "", comment = ""] = match;
  if (!isSupportedKeyType(type)) throw keyError(unsupportedKeyReason(type));
  const blob = decodeBase64(body);
  if (blob === null) throw keyError(`the ${type} key is not valid base64`);
  try {
    const decoded = decodeKeyBlob(blob);
    if (decoded.type !== type) throw keyError(`the line says ${type} but the key inside is ${decoded.type}`);
  } catch (err) {
    if (err instanceof SshsigError) throw keyError(err.message);
    throw err;
  }
  return { type, blob, fingerprint: fingerprintOf(blob), comment: comment.trim() };
}
