import { createHash } from "node:crypto";
import { chmod, constants, type FileHandle, lstat, mkdir, open, opendir, rm, utimes } from "node:fs/promises";
import { basename, isAbsolute, join, normalize } from "node:path";
import {
  buildManifest,
  fromByteString,
  type Manifest,
  type ManifestFile,
  manifestDigest,
  toByteString,
  toDisplayName,
  utf8ByteString,
} from "./manifest.js";

/**
 * Walking a source tree into a broker-owned staging copy (docs/infra-broker.md
 * §Replication). Every directory is opened with O_NOFOLLOW|O_DIRECTORY and
 * its children are reached through that descriptor (`/proc/self/fd/N/name`,
 * the equivalent of openat), so a directory swapped for a symlink during the
 * walk cannot lead it outside the root. Only directories and regular files
 * are accepted: a symlink of any kind, a device, fifo or socket refuses the
 * whole snapshot. Names are bytes (manifest.ts): read as Buffers, kept as
 * byte strings, handed back to the file system as Buffers, so a name that is
 * not UTF-8 or holds a newline is copied and listed as it is. The walk is
 * bounded by an entry count and a byte count, both checked before anything
 * over them is read.
 */

export interface WalkLimits {
  /** Directories and files together. */
  entries: number;
  bytes: number;
  /** Largest single file; defaults to `bytes`. */
  fileBytes?: number;
}

type WalkFailure = { ok: false; code: "SOURCE_UNSAFE" | "LIMIT_EXCEEDED"; message: string };
export type SnapshotResult = { ok: true; manifest: Manifest; id: string } | WalkFailure;

const MAX_DEPTH = 128;
const MAX_PATH_BYTES = 4096;
const CHUNK = 1 << 16;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

class Refusal extends Error {
  constructor(
    readonly code: WalkFailure["code"],
    message: string,
  ) {
    super(message);
  }
}

/**
 * A path as a message shows it: whole when short, else its start and its
 * end around an ellipsis, so an answer stays one readable sentence within
 * the protocol's bound on messages however deep the tree is.
 */
function shown(path: string): string {
  return path.length <= 320 ? path : `${path.slice(0, 120)}…${path.slice(-180)}`;
}

function unsafe(message: string): Refusal {
  return new Refusal("SOURCE_UNSAFE", message);
}

function changed(display: string): Refusal {
  return unsafe(`${display} changed while it was copied; take the snapshot again once it is still.`);
}

/**
 * A directory entry's name as a byte string. The kernel never returns a
 * name with `/` or NUL, or `.`/`..` through readdir here; one would be a
 * broken invariant of the walk, refused rather than followed.
 */
function checkName(raw: Buffer, where: string): string {
  const name = toByteString(raw);
  if (name === "" || name.includes("/") || name.includes("\0") || name === "." || name === "..") {
    throw unsafe(`${where} holds the name ${JSON.stringify(toDisplayName(name))}, which is not a file name`);
  }
  return name;
}

/** A path under `base` (a path as the daemon was given it) to a byte-string relative path, as bytes. */
function under(base: string, rel: string): Buffer {
  return Buffer.concat([Buffer.from(`${base}/`, "utf8"), fromByteString(rel)]);
}

/**
 * The permission bits a staged copy keeps: the source's, without set-id or
 * sticky bits, and always the owner's read and write (and search, for a
 * directory) so the broker can fill and later remove it. The staging tree
 * itself sits in 0700 directories, so these bits expose nothing locally;
 * they are what the receiver gets when the transport preserves modes.
 */
function keptMode(mode: number, owner: number): number {
  return (mode & 0o777) | owner;
}

/** A path the broker may not read is a refusal naming it, not an internal error. */
function failedRead(display: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EACCES" || code === "EPERM")
    return unsafe(`${display} cannot be read by the broker (permission denied).`);
  if (code === "ENOENT") return changed(display);
  return err;
}

async function reading<T>(display: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw failedRead(display, err);
  }
}

interface Walk {
  limits: WalkLimits;
  entries: number;
  bytes: number;
  directories: string[];
  files: ManifestFile[];
  /** Where copies go; null hashes in place. */
  dest: string | null;
}

function fdPath(handle: FileHandle, name?: string): Buffer {
  const dir = `/proc/self/fd/${handle.fd}`;
  return name === undefined ? Buffer.from(dir) : under(dir, name);
}

function count(walk: Walk, display: string): void {
  walk.entries += 1;
  if (walk.entries > walk.limits.entries) {
    throw new Refusal(
      "LIMIT_EXCEEDED",
      `The tree holds more than ${walk.limits.entries} files and directories (stopped at ${display}).`,
    );
  }
}

async function walkDirectory(walk: Walk, dir: FileHandle, rel: string, display: string, depth: number) {
  if (depth > MAX_DEPTH)
    throw new Refusal("LIMIT_EXCEEDED", `${display} is nested deeper than ${MAX_DEPTH} levels.`);
  const listing = await reading(
    display,
    opendir(fdPath(dir), { encoding: "buffer" as BufferEncoding, bufferSize: 64 }),
  );
  const names: string[] = [];
  try {
    for await (const entry of listing) {
      const name = checkName(entry.name as unknown as Buffer, display);
      count(walk, `${display}/${toDisplayName(name)}`);
      names.push(name);
    }
  } finally {
    await listing.close().catch(() => undefined);
  }
  names.sort();
  for (const name of names) {
    const childRel = rel === "" ? name : `${rel}/${name}`;
    const childDisplay = shown(`${display}/${toDisplayName(name)}`);
    if (childRel.length > MAX_PATH_BYTES) {
      throw new Refusal("LIMIT_EXCEEDED", `${childDisplay} is a longer path than ${MAX_PATH_BYTES} bytes.`);
    }
    // lstat through the directory's descriptor first: a device is never opened (opening one can act on it).
    const seen = await reading(childDisplay, lstat(fdPath(dir, name)));
    if (seen.isSymbolicLink())
      throw unsafe(`${childDisplay} is a symbolic link, which a snapshot does not follow.`);
    if (!seen.isDirectory() && !seen.isFile()) {
      throw unsafe(`${childDisplay} is a device, fifo or socket, not a regular file or directory.`);
    }
    let child: FileHandle;
    try {
      child = await open(fdPath(dir, name), seen.isDirectory() ? DIR_FLAGS : FILE_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP" || code === "ENOTDIR" || code === "ENXIO" || code === "ENOENT") {
        throw changed(childDisplay);
      }
      throw failedRead(childDisplay, err);
    }
    try {
      const stat = await child.stat();
      if (stat.ino !== seen.ino || stat.dev !== seen.dev || stat.isDirectory() !== seen.isDirectory()) {
        throw changed(childDisplay);
      }
      if (stat.isDirectory()) {
        walk.directories.push(childRel);
        if (walk.dest !== null) {
          await mkdir(under(walk.dest, childRel), { mode: 0o700 });
          await chmod(under(walk.dest, childRel), keptMode(stat.mode, 0o700));
        }
        await walkDirectory(walk, child, childRel, childDisplay, depth + 1);
      } else {
        await copyFile(walk, child, stat, childRel, childDisplay);
      }
    } finally {
      await child.close();
    }
  }
}

async function copyFile(
  walk: Walk,
  source: FileHandle,
  { size, mtimeMs, mode }: { size: number; mtimeMs: number; mode: number },
  rel: string,
  display: string,
): Promise<void> {
  const fileLimit = walk.limits.fileBytes ?? walk.limits.bytes;
  if (size > fileLimit) {
    throw new Refusal(
      "LIMIT_EXCEEDED",
      `${display} is ${size} bytes, more than the ${fileLimit} allowed for one file.`,
    );
  }
  if (walk.bytes + size > walk.limits.bytes) {
    throw new Refusal(
      "LIMIT_EXCEEDED",
      `The tree holds more than the ${walk.limits.bytes} bytes allowed (reached at ${display}).`,
    );
  }
  const hash = createHash("sha256");
  const target = walk.dest === null ? null : await open(under(walk.dest, rel), CREATE_FLAGS, 0o600);
  const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1) + 1));
  let read = 0;
  try {
    for (;;) {
      // Read one byte past the recorded size at most: a file that grew is detected without reading the growth.
      const want = Math.min(buffer.length, size + 1 - read);
      const { bytesRead } = await source.read(buffer, 0, want, read);
      if (bytesRead === 0) break;
      read += bytesRead;
      if (read > size) break;
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      if (target !== null) await target.write(chunk);
    }
    const after = await source.stat();
    if (read !== size || after.size !== size || after.mtimeMs !== mtimeMs) {
      throw changed(display);
    }
    // No fsync per file: a replicate hashes the staged copy against its manifest again before sending it.
    await target?.chmod(keptMode(mode, 0o600));
  } finally {
    await target?.close();
  }
  if (walk.dest !== null) {
    const when = new Date(mtimeMs);
    await utimes(under(walk.dest, rel), when, when);
  }
  walk.bytes += size;
  walk.files.push({ path: rel, size, sha256: hash.digest("hex") });
}

/** The root checks the profile loader also makes, repeated where the walk starts. */
function rootProblem(roots: readonly string[]): string | null {
  const seen = new Set<string>();
  for (const root of roots) {
    if (!isAbsolute(root) || normalize(root) !== root || root.split("/").includes("..")) {
      return `The source root ${JSON.stringify(shown(root))} is not an absolute, normalised path.`;
    }
    const base = basename(root);
    if (base === "" || base === "." || base === "..")
      return `The source root ${shown(root)} has no base name to stage it under.`;
    if (seen.has(base))
      return `Two source roots share the base name ${base}; each is staged under its base name.`;
    seen.add(base);
  }
  return roots.length === 0 ? "The profile names no source root." : null;
}

async function walkRoots(roots: readonly string[], limits: WalkLimits, dest: string | null) {
  const walk: Walk = { limits, entries: 0, bytes: 0, directories: [], files: [], dest };
  for (const root of roots) {
    const base = utf8ByteString(basename(root));
    let handle: FileHandle;
    try {
      handle = await open(root, DIR_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP" || code === "ENOTDIR")
        throw unsafe(`The source root ${shown(root)} is not a directory (or is a symbolic link).`);
      if (code === "ENOENT") throw unsafe(`The source root ${shown(root)} does not exist.`);
      throw failedRead(shown(root), err);
    }
    try {
      count(walk, shown(root));
      walk.directories.push(base);
      if (dest !== null) {
        // The root's own mode, as for every directory below it: not the staging area's 0700.
        await mkdir(under(dest, base), { mode: 0o700 });
        await chmod(under(dest, base), keptMode((await handle.stat()).mode, 0o700));
      }
      await walkDirectory(walk, handle, base, shown(root), 1);
    } finally {
      await handle.close();
    }
  }
  return walk;
}

/**
 * Copy every source root into `dest` (a new, empty, private directory the
 * caller owns) under its base name, and return the manifest. On a refusal
 * `dest` is left for the caller to remove.
 */
export async function takeSnapshot(
  roots: readonly string[],
  limits: WalkLimits,
  dest: string,
): Promise<SnapshotResult> {
  const problem = rootProblem(roots);
  if (problem !== null) return { ok: false, code: "SOURCE_UNSAFE", message: problem };
  try {
    const walk = await walkRoots(roots, limits, dest);
    const manifest = buildManifest(
      roots.map((r) => utf8ByteString(basename(r))),
      walk.directories,
      walk.files,
    );
    return { ok: true, manifest, id: manifestDigest(manifest) };
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

export type HashResult = { ok: true; directories: string[]; files: ManifestFile[] } | WalkFailure;

/**
 * Hash a tree in place under the same rules (a pulled copy of a run
 * directory): paths relative to `dir`, which itself is not listed.
 */
export async function hashTree(dir: string, limits: WalkLimits): Promise<HashResult> {
  const walk: Walk = { limits, entries: 0, bytes: 0, directories: [], files: [], dest: null };
  try {
    const handle = await reading(dir, open(dir, DIR_FLAGS));
    try {
      await walkDirectory(walk, handle, "", shown(dir), 1);
    } finally {
      await handle.close();
    }
    return { ok: true, directories: walk.directories, files: walk.files };
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

/**
 * Remove a staging or scratch directory; a failure here must not hide the
 * operation's outcome. A pulled copy may hold directories the receiver made
 * unwritable: those are opened up (never following links) and the removal
 * tried once more.
 */
export async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    await openUp(path).catch(() => undefined);
    await rm(path, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function openUp(path: string): Promise<void> {
  const stat = await lstat(path);
  if (!stat.isDirectory()) return;
  await chmod(path, 0o700);
  const entries = await opendir(path);
  for await (const entry of entries) {
    if (entry.isDirectory()) await openUp(join(path, entry.name));
  }
}
