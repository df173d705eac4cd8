import { createPublicKey, type KeyObject } from "node:crypto";
import { createRequire } from "node:module";
import { readBoundedFile, trustAnchorProblems } from "../files/index.js";

const require = createRequire(import.meta.url);

/**
 * The COSE helpers of @simplewebauthn/server, loaded when a passkeys file is
 * first read: the library is large, and a relay without passkeys never
 * needs it, least of all at start-up.
 */
function helpers(): typeof import("@simplewebauthn/server/helpers") {
  return require("@simplewebauthn/server/helpers") as typeof import("@simplewebauthn/server/helpers");
}

/** The COSE algorithms a passkey of this relay may use: ES256, EdDSA (Ed25519), RS256. */
export type PasskeyAlgorithm = -7 | -8 | -257;

/** One enrolled passkey: a line of the operator's passkeys file. */
export interface Passkey {
  /** The operator's name for it; the audit records it as the approver. */
  name: string;
  /** base64url, as the browser reports it. */
  credentialId: string;
  algorithm: PasskeyAlgorithm;
  publicKey: KeyObject;
  /** The COSE_Key as the file spells it (base64url), for a WebAuthn library that wants it whole. */
  publicKeyCose: string;
  transports: string[];
  created: string;
}

/** Why the passkeys file cannot be trusted or used; the message names every problem. */
class PasskeysFileError extends Error {}

/** A passkeys file larger than this is refused rather than read: it is a list of keys, not data. */
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_NAME = 128;
/** WebAuthn bounds a credential id to 1023 bytes. */
const MAX_CREDENTIAL_ID_BYTES = 1023;
const MAX_PUBLIC_KEY_BYTES = 2048;

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * The bytes of a base64url text, or null when it is not canonical
 * base64url (padding, other alphabets, stray bits): one credential has
 * exactly one spelling, so the lookup by id cannot be fooled.
 */
export function fromBase64url(text: string): Buffer | null {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : null;
}

function isPrintableName(name: string): boolean {
  if (name.trim() !== name || name === "" || name.length > MAX_NAME) return false;
  for (const ch of name) {
    const code = ch.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

function coseNumber(key: Map<number, unknown>, label: number): number | undefined {
  const value = key.get(label);
  return typeof value === "number" ? value : undefined;
}

function coseBytes(key: Map<number, unknown>, label: number): Buffer | undefined {
  const value = key.get(label);
  return value instanceof Uint8Array ? Buffer.from(value) : undefined;
}

/**
 * A COSE_Key (RFC 9053) for the algorithm the file declares, as a node:crypto
 * public key. The key's own `alg`, when present, must agree: a key enrolled
 * for one algorithm is never used with another.
 */
function coseToKeyObject(bytes: Buffer, algorithm: PasskeyAlgorithm): KeyObject {
  const { cose, decodeCredentialPublicKey, isoCBOR } = helpers();
  let decoded: unknown;
  try {
    decoded = decodeCredentialPublicKey(new Uint8Array(bytes));
  } catch (err) {
    throw new Error(`not CBOR (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!(decoded instanceof Map)) throw new Error("not a COSE_Key map");
  // CTAP2 keys are canonical CBOR, so one encodes back to its own length; more bytes are not part of the key.
  if (isoCBOR.encode(decoded).length !== bytes.length) throw new Error("bytes follow the COSE_Key");
  const key = decoded as Map<number, unknown>;
  const kty = coseNumber(key, cose.COSEKEYS.kty);
  const alg = coseNumber(key, cose.COSEKEYS.alg);
  if (alg !== undefined && alg !== algorithm)
    throw new Error(`the key is for COSE algorithm ${alg}, not ${algorithm}`);
  const b64 = (b: Buffer) => b.toString("base64url");
  switch (algorithm) {
    case -7: {
      const x = coseBytes(key, cose.COSEKEYS.x);
      const y = coseBytes(key, cose.COSEKEYS.y);
      if (kty !== cose.COSEKTY.EC2 || coseNumber(key, cose.COSEKEYS.crv) !== cose.COSECRV.P256) {
        throw new Error("ES256 needs an EC2 key on P-256");
      }
      if (x?.length !== 32 || y?.length !== 32) throw new Error("an EC2 P-256 key needs 32-byte x and y");
      return createPublicKey({ key: { kty: "EC", crv: "P-256", x: b64(x), y: b64(y) }, format: "jwk" });
    }
    case -8: {
      const x = coseBytes(key, cose.COSEKEYS.x);
      if (kty !== cose.COSEKTY.OKP || coseNumber(key, cose.COSEKEYS.crv) !== cose.COSECRV.ED25519) {
        throw new Error("EdDSA needs an OKP key on Ed25519");
      }
      if (x?.length !== 32) throw new Error("an Ed25519 key needs a 32-byte x");
      return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: b64(x) }, format: "jwk" });
    }
    case -257: {
      const n = coseBytes(key, cose.COSEKEYS.n);
      const e = coseBytes(key, cose.COSEKEYS.e);
      if (kty !== cose.COSEKTY.RSA) throw new Error("RS256 needs an RSA key");
      if (!n || !e || n.length === 0 || e.length === 0) throw new Error("an RSA key needs n and e");
      const publicKey = createPublicKey({ key: { kty: "RSA", n: b64(n), e: b64(e) }, format: "jwk" });
      const bits = publicKey.asymmetricKeyDetails?.modulusLength ?? 0;
      if (bits < 2048) throw new Error(`an RSA key of ${bits} bits is too weak (2048 at least)`);
      return publicKey;
    }
  }
}

function isAlgorithm(value: unknown): value is PasskeyAlgorithm {
  return value === -7 || value === -8 || value === -257;
}

/** One line, or the problems that make it unusable. */
function parseLine(text: string): Passkey | string[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return ["not JSON"];
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return ["not a JSON object"];
  const o = raw as Record<string, unknown>;
  const problems: string[] = [];
  const name = o.name;
  if (typeof name !== "string" || !isPrintableName(name)) {
    problems.push(`name: expected 1..${MAX_NAME} printable characters without surrounding blanks`);
  }
  const id = typeof o.credential_id === "string" ? fromBase64url(o.credential_id) : null;
  if (id === null || id.length === 0 || id.length > MAX_CREDENTIAL_ID_BYTES) {
    problems.push(`credential_id: expected base64url of 1..${MAX_CREDENTIAL_ID_BYTES} bytes`);
  }
  const algorithm = o.algorithm;
  if (!isAlgorithm(algorithm)) problems.push("algorithm: expected -7 (ES256), -8 (EdDSA) or -257 (RS256)");
  const keyBytes = typeof o.public_key === "string" ? fromBase64url(o.public_key) : null;
  let publicKey: KeyObject | undefined;
  if (keyBytes === null || keyBytes.length > MAX_PUBLIC_KEY_BYTES) {
    problems.push(`public_key: expected base64url of a COSE_Key (at most ${MAX_PUBLIC_KEY_BYTES} bytes)`);
  } else if (isAlgorithm(algorithm)) {
    try {
      publicKey = coseToKeyObject(keyBytes, algorithm);
    } catch (err) {
      problems.push(`public_key: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const transports = o.transports ?? [];
  if (!Array.isArray(transports) || !transports.every((t) => typeof t === "string" && t.length <= 32)) {
    problems.push("transports: expected an array of strings");
  }
  const created = o.created;
  if (
    typeof created !== "string" ||
    !/^\d{4}-\d\d-\d\dT/.test(created) ||
    Number.isNaN(Date.parse(created))
  ) {
    problems.push("created: expected an ISO 8601 date and time");
  }
  if (problems.length > 0 || !publicKey) return problems;
  return {
    name: name as string,
    credentialId: o.credential_id as string,
    algorithm: algorithm as PasskeyAlgorithm,
    publicKey,
    publicKeyCose: o.public_key as string,
    transports: transports as string[],
    created: created as string,
  };
}

/** Parse the text of a passkeys file; every problem is reported with its line number. */
export function parsePasskeys(text: string, source: string): { passkeys: Passkey[] } {
  const problems: string[] = [];
  const passkeys: Passkey[] = [];
  const ids = new Map<string, number>();
  const names = new Map<string, number>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    const at = `${source}:${index + 1}`;
    if (line === "" || line.startsWith("#")) return;
    const parsed = parseLine(line);
    if (Array.isArray(parsed)) {
      for (const p of parsed) problems.push(`${at}: ${p}`);
      return;
    }
    const sameId = ids.get(parsed.credentialId);
    if (sameId !== undefined) problems.push(`${at}: credential_id already enrolled on line ${sameId}`);
    const sameName = names.get(parsed.name);
    if (sameName !== undefined)
      problems.push(`${at}: name "${parsed.name}" already used on line ${sameName}`);
    ids.set(parsed.credentialId, index + 1);
    names.set(parsed.name, index + 1);
    passkeys.push(parsed);
  });
  if (problems.length > 0) throw new PasskeysFileError(problems.join("; "));
  return { passkeys };
}

/**
 * Read the operator's passkeys file (docs/consent.md, "Trust anchors"),
 * after checking the relay could not have written it. Throws a
 * PasskeysFileError naming every problem; an empty file is valid (no
 * passkey can approve).
 */
export function loadPasskeys(path: string, owner: { selfUid: number }): { passkeys: Passkey[] } {
  const unsafe = trustAnchorProblems(path, owner);
  if (unsafe.length > 0) throw new PasskeysFileError(unsafe.join("; "));
  let bytes: Buffer | null;
  try {
    bytes = readBoundedFile(path, { maxBytes: MAX_FILE_BYTES, what: "passkeys file" });
  } catch (err) {
    throw new PasskeysFileError(err instanceof Error ? err.message : String(err));
  }
  if (bytes === null) throw new PasskeysFileError(`${path} does not exist`);
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  let decoded: string;
  try {
    decoded = text.decode(bytes);
  } catch {
    throw new PasskeysFileError(`${path} is not UTF-8`);
  }
  return parsePasskeys(decoded, path);
}
