import { createHash } from "node:crypto";
import { canonicalJson } from "../core/index.js";

/**
 * Names are bytes. A path here is a byte string: one character (U+0000..U+00FF)
 * per byte of the name, exactly as the file system holds it, so names that
 * are not UTF-8, or hold a newline or a backslash, compare byte for byte on
 * both sides (the staged tree, the receiver's listing, the pulled copy).
 * Nothing here decodes a name as text; toDisplayName does, for messages only.
 */
export function toByteString(bytes: Buffer): string {
  return bytes.toString("latin1");
}

/** The bytes of a byte string (the path to hand to the file system). */
export function fromByteString(name: string): Buffer {
  return Buffer.from(name, "latin1");
}

/** A JavaScript string as a byte string of its UTF-8 encoding (a source root's base name). */
export function utf8ByteString(text: string): string {
  return toByteString(Buffer.from(text, "utf8"));
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A byte-string path as a person reads it: the UTF-8 text when the bytes are
 * UTF-8, with control characters and `\` (and, when they are not UTF-8, every
 * byte above 0x7f) written as rsync does, `\#ooo`. For messages and
 * difference lists only: two names can never be told apart by this form alone
 * being compared, and nothing compares it.
 */
export function toDisplayName(name: string): string {
  const bytes = fromByteString(name);
  let text: string | null;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    text = null;
  }
  const octalEscape = (code: number) => `\\#${code.toString(8).padStart(3, "0")}`;
  if (text !== null) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
    return text.replace(/[\x00-\x1f\x7f\\]/g, (c) => octalEscape(c.charCodeAt(0)));
  }
  let out = "";
  for (const byte of bytes)
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : octalEscape(byte);
  return out;
}

/**
 * The manifest of a snapshot (docs/infra-broker.md §Replication): every
 * directory and regular file of the staged copy, by path relative to the
 * staging root (`<root base name>/...`), sorted, with the size and SHA-256 of
 * each file. Its digest is the snapshot's id, so two snapshots of the same
 * bytes under the same names have the same id. Version 2 holds byte-string
 * paths; version 1 (written before) held UTF-8 text, which only ever carried
 * valid UTF-8 names and is read back as their bytes.
 */
export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

export interface Manifest {
  version: 1 | 2;
  /** Base names of the source roots, in the profile's order. */
  roots: string[];
  directories: string[];
  files: ManifestFile[];
  total_files: number;
  total_bytes: number;
}

/** Byte order of the names (byte strings compare by code unit, which is the byte): no collation. */
function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function buildManifest(
  roots: string[],
  directories: string[],
  files: ManifestFile[],
  version: Manifest["version"] = 2,
): Manifest {
  const sortedFiles = [...files].sort((x, y) => comparePaths(x.path, y.path));
  return {
    version,
    roots: [...roots],
    directories: [...directories].sort(comparePaths),
    files: sortedFiles,
    total_files: sortedFiles.length,
    total_bytes: sortedFiles.reduce((sum, f) => sum + f.size, 0),
  };
}

/** The snapshot id: SHA-256 of the manifest's canonical JSON. */
export function manifestDigest(manifest: Manifest): string {
  return createHash("sha256").update(canonicalJson(manifest), "utf8").digest("hex");
}

/** What one side holds: the staged manifest, or what was found on the receiver. */
export interface TreeListing {
  directories: ReadonlySet<string>;
  /** Path to size, and the hash when the bytes were read. */
  files: ReadonlyMap<string, { size: number; sha256?: string }>;
}

type DifferenceKind = "missing" | "extra" | "size" | "hash" | "type";

interface Difference {
  path: string;
  kind: DifferenceKind;
}

/** At most this many differences are listed in a result, in at most MAX_LISTED_BYTES of paths; the counts are always complete. */
export const MAX_LISTED_DIFFERENCES = 50;
export const MAX_LISTED_BYTES = 8192;

export interface Comparison {
  differences: Difference[];
  counts: Record<DifferenceKind, number>;
}

/**
 * Compare a manifest with a tree found on the receiver. Hashes are compared
 * only where the found side carries one (a listing has sizes, a pulled copy
 * has both). Every difference is counted; the first ones in path order are
 * listed, as many as the count and byte bounds allow.
 */
export function compareWithManifest(manifest: Manifest, found: TreeListing): Comparison {
  const all: Difference[] = [];
  const expectedDirs = new Set(manifest.directories);
  const expectedFiles = new Map(manifest.files.map((f) => [f.path, f]));
  for (const dir of manifest.directories) {
    if (found.files.has(dir)) all.push({ path: dir, kind: "type" });
    else if (!found.directories.has(dir)) all.push({ path: dir, kind: "missing" });
  }
  for (const file of manifest.files) {
    const there = found.files.get(file.path);
    if (there === undefined) {
      all.push({ path: file.path, kind: found.directories.has(file.path) ? "type" : "missing" });
    } else if (there.size !== file.size) {
      all.push({ path: file.path, kind: "size" });
    } else if (there.sha256 !== undefined && there.sha256 !== file.sha256) {
      all.push({ path: file.path, kind: "hash" });
    }
  }
  for (const dir of found.directories) {
    if (!expectedDirs.has(dir) && !expectedFiles.has(dir)) all.push({ path: dir, kind: "extra" });
  }
  for (const path of found.files.keys()) {
    if (!expectedFiles.has(path) && !expectedDirs.has(path)) all.push({ path, kind: "extra" });
  }
  all.sort((x, y) => comparePaths(x.path, y.path) || (x.kind < y.kind ? -1 : 1));
  const counts: Record<DifferenceKind, number> = { missing: 0, extra: 0, size: 0, hash: 0, type: 0 };
  for (const d of all) counts[d.kind] += 1;
  const listed: Difference[] = [];
  let bytes = 0;
  for (const d of all) {
    const path = toDisplayName(d.path);
    bytes += Buffer.byteLength(path);
    if (listed.length === MAX_LISTED_DIFFERENCES || bytes > MAX_LISTED_BYTES) break;
    listed.push({ path, kind: d.kind });
  }
  return { differences: listed, counts };
}

/** A manifest as a listing, for comparing two manifests or counting. */
export function manifestListing(manifest: Manifest): TreeListing {
  return {
    directories: new Set(manifest.directories),
    files: new Map(manifest.files.map((f) => [f.path, { size: f.size, sha256: f.sha256 }])),
  };
}

/** Read back a stored manifest; null when it is not one or does not carry the expected digest. */
export function parseManifest(text: string, expectedId: string): Manifest | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isManifest(value)) return null;
  const manifest = buildManifest(value.roots, value.directories, value.files, value.version);
  if (manifestDigest(manifest) !== expectedId) return null;
  if (manifest.version === 2) return manifest;
  // Version 1 held the names as UTF-8 text: the same names, as their bytes.
  return {
    ...manifest,
    roots: manifest.roots.map(utf8ByteString),
    directories: manifest.directories.map(utf8ByteString),
    files: manifest.files.map((f) => ({ ...f, path: utf8ByteString(f.path) })),
  };
}

function isManifest(value: unknown): value is Manifest {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  const strings = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string");
  return (
    (m.version === 1 || m.version === 2) &&
    strings(m.roots) &&
    strings(m.directories) &&
    Array.isArray(m.files) &&
    m.files.every(
      (f: unknown) =>
        typeof f === "object" &&
        f !== null &&
        typeof (f as ManifestFile).path === "string" &&
        Number.isSafeInteger((f as ManifestFile).size) &&
        /^[0-9a-f]{64}$/.test(String((f as ManifestFile).sha256)),
    )
  );
}
