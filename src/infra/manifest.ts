import { createHash } from "node:crypto";
import { canonicalJson } from "../core/index.js";

/**
 * The manifest of a snapshot (docs/infra-broker.md §Replication): every
 * directory and regular file of the staged copy, by path relative to the
 * staging root (`<root base name>/...`), sorted, with the size and SHA-256 of
 * each file. Its digest is the snapshot's id, so two snapshots of the same
 * bytes under the same names have the same id.
 */
export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

export interface Manifest {
  version: 1;
  /** Base names of the source roots, in the profile's order. */
  roots: string[];
  directories: string[];
  files: ManifestFile[];
  total_files: number;
  total_bytes: number;
}

/** Byte order of the UTF-8 encodings: the same order whatever the platform's collation. */
function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

export function buildManifest(roots: string[], directories: string[], files: ManifestFile[]): Manifest {
  const sortedFiles = [...files].sort((x, y) => comparePaths(x.path, y.path));
  return {
    version: 1,
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
    bytes += Buffer.byteLength(d.path);
    if (listed.length === MAX_LISTED_DIFFERENCES || bytes > MAX_LISTED_BYTES) break;
    listed.push(d);
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
  const manifest = buildManifest(value.roots, value.directories, value.files);
  return manifestDigest(manifest) === expectedId ? manifest : null;
}

function isManifest(value: unknown): value is Manifest {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  const strings = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string");
  return (
    m.version === 1 &&
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
