import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { wildcardMatch } from "../core/index.js";

/**
 * The OpenSSH known_hosts format, read and written by hand: ssh2 hands the
 * verifier the raw key blob and leaves every comparison to us. Pure text
 * work; the file I/O lives in the store.
 */

type KnownHostsMarker = "" | "revoked" | "cert-authority";

export interface KnownHostEntry {
  marker: KnownHostsMarker;
  /** Plain comma-separated host patterns (lower-cased), or null for a hashed entry. */
  patterns: string[] | null;
  /** `|1|salt|hmac` entries: HMAC-SHA1 of the host name keyed with the salt. */
  hashed: { salt: Buffer; hmac: Buffer } | null;
  keyType: string;
  /** The raw SSH public key blob (the base64 field, decoded). */
  key: Buffer;
  file: string;
  line: number;
}

export interface ParsedKnownHosts {
  entries: KnownHostEntry[];
  /** Lines that could not be read as an entry (skipped, as OpenSSH does). */
  skipped: number;
}

const HASH_MAGIC = "|1|";
const SHA1_BYTES = 20;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const MAX_LINE = 64 * 1024;
/** What may appear in a host we write into the file: no separators, spaces or line breaks. */
const HOST_CHARS = /^[A-Za-z0-9._%:-]+$/;

function parseHashed(field: string): { salt: Buffer; hmac: Buffer } | null {
  const parts = field.slice(HASH_MAGIC.length).split("|");
  if (parts.length !== 2) return null;
  const [salt = "", hmac = ""] = parts;
  if (!BASE64.test(salt) || !BASE64.test(hmac)) return null;
  const saltBytes = Buffer.from(salt, "base64");
  const hmacBytes = Buffer.from(hmac, "base64");
  if (saltBytes.length !== SHA1_BYTES || hmacBytes.length !== SHA1_BYTES) return null;
  return { salt: saltBytes, hmac: hmacBytes };
}

/** Parse the text of one known_hosts file. Comments, blanks and unreadable lines are skipped. */
export function parseKnownHosts(text: string, file = ""): ParsedKnownHosts {
  const entries: KnownHostEntry[] = [];
  let skipped = 0;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] ?? "").replace(/\r$/, "").trim();
    if (raw === "" || raw.startsWith("#")) continue;
    if (raw.length > MAX_LINE) {
      skipped++;
      continue;
    }
    const fields = raw.split(/[ \t]+/);
    let marker: KnownHostsMarker = "";
    if (fields[0]?.startsWith("@")) {
      const name = fields.shift();
      if (name === "@revoked") marker = "revoked";
      else if (name === "@cert-authority") marker = "cert-authority";
      else {
        skipped++;
        continue;
      }
    }
    const [hostField = "", keyType = "", keyText = ""] = fields;
    if (hostField === "" || keyType === "" || !BASE64.test(keyText)) {
      skipped++;
      continue;
    }
    const key = Buffer.from(keyText, "base64");
    if (keyTypeOfBlob(key) !== keyType) {
      skipped++;
      continue;
    }
    let patterns: string[] | null = null;
    let hashed: KnownHostEntry["hashed"] = null;
    if (hostField.startsWith(HASH_MAGIC)) {
      hashed = parseHashed(hostField);
      if (!hashed) {
        skipped++;
        continue;
      }
    } else {
      patterns = hostField
        .toLowerCase()
        .split(",")
        .filter((p) => p !== "");
    }
    entries.push({ marker, patterns, hashed, keyType, key, file, line: i + 1 });
  }
  return { entries, skipped };
}

/** The name a host is filed under: the bare host on port 22, `[host]:port` otherwise (as OpenSSH does). */
export function knownHostsName(host: string, port: number): string {
  const bare = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return port === 22 ? bare : `[${bare}]:${port}`;
}

/**
 * OpenSSH pattern-list semantics: any negated pattern that matches rules the
 * entry out, otherwise one positive match is enough.
 */
export function patternListMatches(patterns: readonly string[], name: string): boolean {
  let positive = false;
  for (const pattern of patterns) {
    if (pattern.startsWith("!")) {
      if (wildcardMatch(pattern.slice(1), name)) return false;
    } else if (wildcardMatch(pattern, name)) {
      positive = true;
    }
  }
  return positive;
}

function hashHostName(name: string, salt: Buffer): Buffer {
  return createHmac("sha1", salt).update(name).digest();
}

/** A hashed host field, `|1|<salt>|<hmac>`, as `ssh-keygen -H` writes it. */
export function formatHashedHost(name: string, salt: Buffer = randomBytes(SHA1_BYTES)): string {
  return `${HASH_MAGIC}${salt.toString("base64")}|${hashHostName(name, salt).toString("base64")}`;
}

export function entryMatches(entry: KnownHostEntry, name: string): boolean {
  if (entry.hashed) {
    const mac = hashHostName(name, entry.hashed.salt);
    return timingSafeEqual(mac, entry.hashed.hmac);
  }
  return patternListMatches(entry.patterns ?? [], name);
}

/** The key type named inside an SSH public key blob (its first length-prefixed string). */
export function keyTypeOfBlob(blob: Buffer): string {
  if (blob.length < 4) return "";
  const length = blob.readUInt32BE(0);
  if (length === 0 || length > 64 || 4 + length > blob.length) return "";
  return blob.subarray(4, 4 + length).toString("latin1");
}

/** `SHA256:<base64 without padding>`, the fingerprint `ssh-keygen -l` prints. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

export function sameKey(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function isWritableHostName(host: string): boolean {
  return host.length > 0 && host.length <= 255 && HOST_CHARS.test(host);
}

/** One line in the file format; the host is validated so no caller can smuggle a second line in. */
export function formatKnownHostsLine(host: string, port: number, blob: Buffer): string {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (!isWritableHostName(bare))
    throw new Error(`refusing to write an unsafe host name: ${JSON.stringify(host)}`);
  const type = keyTypeOfBlob(blob);
  if (!/^[A-Za-z0-9@._-]+$/.test(type)) throw new Error("refusing to write a key blob without a key type");
  return `${knownHostsName(bare, port)} ${type} ${blob.toString("base64")}`;
}

/** Host-key algorithms that make a server present a key of this type. */
export function algorithmsForKeyType(type: string): string[] {
  switch (type) {
    case "ssh-rsa":
      return ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"];
    case "ssh-ed25519":
    case "ecdsa-sha2-nistp256":
    case "ecdsa-sha2-nistp384":
    case "ecdsa-sha2-nistp521":
    case "ssh-dss":
      return [type];
    default:
      return [];
  }
}
