import { readBoundedFile, trustAnchorProblems } from "../files/index.js";

/** COSE algorithms a passkey of the console may use: ES256, EdDSA, RS256. */
export const PASSKEY_ALGORITHMS = [-7, -8, -257] as const;

const TRANSPORTS = new Set(["ble", "cable", "hybrid", "internal", "nfc", "smart-card", "usb"]);
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
/** A passkeys file is a handful of lines; a larger one is a mistake, not a fleet. */
const MAX_FILE_BYTES = 1024 * 1024;

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
export type PasskeysRead = { ok: true; keys: Passkey[] } | { ok: false; problems: string[] };

/** The text of a valid operator name, for `console enrol --name`; null when it is valid. */
export function passkeyNameProblem(name: string): string | null {
  return NAME.test(name)
    ? null
    : "a passkey name is 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit";
}

function isBase64url(value: unknown, maxLength: number): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= maxLength && BASE64URL.test(value);
}

/** One line's passkey, or what is wrong with it. */
function parseLine(line: string): Passkey | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "not a JSON object";
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not a JSON object";
  const o = value as Record<string, unknown>;
  const known = new Set(["name", "credential_id", "public_key", "algorithm", "transports", "created"]);
  const unknown = Object.keys(o).filter((k) => !known.has(k));
  if (unknown.length > 0) return `unknown field ${JSON.stringify(unknown[0])}`;
  if (typeof o.name !== "string" || passkeyNameProblem(o.name) !== null)
    return "name: expected a passkey name";
  if (!isBase64url(o.credential_id, 1366)) return "credential_id: expected base64url";
  if (!isBase64url(o.public_key, 4096)) return "public_key: expected base64url of a COSE key";
  if (typeof o.algorithm !== "number" || !(PASSKEY_ALGORITHMS as readonly number[]).includes(o.algorithm)) {
    return `algorithm: expected one of ${PASSKEY_ALGORITHMS.join(", ")}`;
  }
  const transports = o.transports ?? [];
  if (!Array.isArray(transports) || transports.some((t) => typeof t !== "string" || !TRANSPORTS.has(t))) {
    return "transports: expected a list of WebAuthn transports";
  }
  if (typeof o.created !== "string" || Number.isNaN(Date.parse(o.created))) {
    return "created: expected an ISO 8601 time";
  }
  return {
    name: o.name,
    credentialId: o.credential_id as string,
    publicKey: o.public_key as string,
    algorithm: o.algorithm,
    transports: transports as string[],
    created: o.created,
  };
}

/** Parse the text of a passkeys file: one JSON object a line, `#` comments and blank lines skipped. */
export function parsePasskeys(text: string, file: string): PasskeysRead {
  const keys: Passkey[] = [];
  const problems: string[] = [];
  const names = new Set<string>();
  const ids = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const parsed = parseLine(line);
    const where = `${file}:${index + 1}`;
    if (typeof parsed === "string") {
      problems.push(`${where}: ${parsed}`);
      return;
    }
    if (ids.has(parsed.credentialId))
      problems.push(`${where}: credential ${parsed.credentialId} appears twice`);
    else if (names.has(parsed.name)) problems.push(`${where}: the name ${parsed.name} appears twice`);
    ids.add(parsed.credentialId);
    names.add(parsed.name);
    keys.push(parsed);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, keys };
}

/**
 * Read the operator's passkeys file for the relay running as `selfUid`. The
 * file is a trust anchor: one the relay's own account could rewrite would
 * let a compromised relay enrol its own passkey, so it is refused like an
 * allowed-signers file.
 */
export function loadPasskeys(path: string, selfUid: number): PasskeysRead {
  const problems = trustAnchorProblems(path, { selfUid });
  if (problems.length > 0) return { ok: false, problems };
  let bytes: Buffer | null;
  try {
    bytes = readBoundedFile(path, { maxBytes: MAX_FILE_BYTES, what: "passkeys file" });
  } catch (err) {
    return { ok: false, problems: [err instanceof Error ? err.message : String(err)] };
  }
  if (bytes === null) return { ok: false, problems: [`${path} does not exist`] };
  return parsePasskeys(bytes.toString("utf8"), path);
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
