import { createHash } from "node:crypto";
import { chmod, constants, type FileHandle, lstat, mkdir, open, opendir, rm, utimes } from "node:fs/promises";
import { basename, isAbsolute, join, normalize } from "node:path";
import { fail, ok, type Result } from "../core/index.js";
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

/** Why a walk stopped: the tree is not safe to copy as it is, or it is over its bounds. */
interface WalkRefusal {
  code: "SOURCE_UNSAFE" | "LIMIT_EXCEEDED";
  message: string;
}

/** One step of the walk: done, or the refusal that ends the whole walk. */
type Step<T = undefined> = Result<T, WalkRefusal>;

const MAX_DEPTH = 128;
const MAX_PATH_BYTES = 4096;
const CHUNK = 1 << 16;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const DONE: Step = ok(undefined);

/**
 * A path as a message shows it: whole when short, else its start and its
 * end around an ellipsis, so an answer stays one readable sentence within
 * the protocol's bound on messages however deep the tree is.
 */
function shown(path: string): string {
  return path.length <= 320 ? path : `${path.slice(0, 120)}…${path.slice(-180)}`;
}

function unsafe(message: string): Step<never> {
  return fail({ code: "SOURCE_UNSAFE", message });
}

function overLimit(message: string): Step<never> {
  return fail({ code: "LIMIT_EXCEEDED", message });
}

function changed(display: string): Step<never> {
  return unsafe(`${display} changed while it was copied; take the snapshot again once it is still.`);
}

/**
 * A directory entry's name as a byte string. The kernel never returns a
 * name with `/` or NUL, or `.`/`..` through readdir here; one would be a
 * broken invariant of the walk, refused rather than followed.
 */
function checkName(raw: Buffer, where: string): Step<string> {
  const name = toByteString(raw);
  if (name === "" || name.includes("/") || name.includes("\0") || name === "." || name === "..") {
    return unsafe(`${where} holds the name ${JSON.stringify(toDisplayName(name))}, which is not a file name`);
  }
  return ok(name);
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

/** A path the broker may not read is a refusal naming it; any other failure is thrown on. */
function failedRead(display: string, err: unknown): Step<never> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EACCES" || code === "EPERM")
    return unsafe(`${display} cannot be read by the broker (permission denied).`);
  if (code === "ENOENT") return changed(display);
  throw err;
}

async function reading<T>(display: string, work: Promise<T>): Promise<Step<T>> {
  try {
    return ok(await work);
  } catch (err) {
    return failedRead(display, err);
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

function count(walk: Walk, display: string): Step {
  walk.entries += 1;
  if (walk.entries <= walk.limits.entries) return DONE;
  return overLimit(
    `The tree holds more than ${walk.limits.entries} files and directories (stopped at ${display}).`,
  );
}

/** The names in a directory, sorted, each counted against the walk's bound on entries. */
async function listNames(walk: Walk, dir: FileHandle, display: string): Promise<Step<string[]>> {
  const listing = await reading(
    display,
    opendir(fdPath(dir), { encoding: "buffer" as BufferEncoding, bufferSize: 64 }),
  );
  if (!listing.ok) return listing;
  const names: string[] = [];
  try {
    for await (const entry of listing.value) {
      const name = checkName(entry.name as unknown as Buffer, display);
      if (!name.ok) return name;
      const counted = count(walk, `${display}/${toDisplayName(name.value)}`);
      if (!counted.ok) return counted;
      names.push(name.value);
    }
  } finally {
    await listing.value.close().catch(() => undefined);
  }
  return ok(names.sort());
}

async function walkDirectory(
  walk: Walk,
  dir: FileHandle,
  rel: string,
  display: string,
  depth: number,
): Promise<Step> {
  if (depth > MAX_DEPTH) return overLimit(`${display} is nested deeper than ${MAX_DEPTH} levels.`);
  const names = await listNames(walk, dir, display);
  if (!names.ok) return names;
  for (const name of names.value) {
    const childRel = rel === "" ? name : `${rel}/${name}`;
    const childDisplay = shown(`${display}/${toDisplayName(name)}`);
    if (childRel.length > MAX_PATH_BYTES) {
      return overLimit(`${childDisplay} is a longer path than ${MAX_PATH_BYTES} bytes.`);
    }
    const visited = await visitChild(walk, { dir, name, rel: childRel, display: childDisplay, depth });
    if (!visited.ok) return visited;
  }
  return DONE;
}

/** One entry of a directory being walked: `rel` and `display` name the entry itself. */
interface Child {
  dir: FileHandle;
  name: string;
  rel: string;
  display: string;
  depth: number;
}

async function visitChild(walk: Walk, c: Child): Promise<Step> {
  // lstat through the directory's descriptor first: a device is never opened (opening one can act on it).
  const looked = await reading(c.display, lstat(fdPath(c.dir, c.name)));
  if (!looked.ok) return looked;
  const seen = looked.value;
  if (seen.isSymbolicLink())
    return unsafe(`${c.display} is a symbolic link, which a snapshot does not follow.`);
  if (!seen.isDirectory() && !seen.isFile()) {
    return unsafe(`${c.display} is a device, fifo or socket, not a regular file or directory.`);
  }
  let child: FileHandle;
  try {
    child = await open(fdPath(c.dir, c.name), seen.isDirectory() ? DIR_FLAGS : FILE_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR" || code === "ENXIO" || code === "ENOENT") {
      return changed(c.display);
    }
    return failedRead(c.display, err);
  }
  try {
    const stat = await child.stat();
    if (stat.ino !== seen.ino || stat.dev !== seen.dev || stat.isDirectory() !== seen.isDirectory()) {
      return changed(c.display);
    }
    if (!stat.isDirectory()) return await copyFile(walk, child, stat, c.rel, c.display);
    walk.directories.push(c.rel);
    if (walk.dest !== null) {
      await mkdir(under(walk.dest, c.rel), { mode: 0o700 });
      await chmod(under(walk.dest, c.rel), keptMode(stat.mode, 0o700));
    }
    return await walkDirectory(walk, child, c.rel, c.display, c.depth + 1);
  } finally {
    await child.close();
  }
}

async function copyFile(
  walk: Walk,
  source: FileHandle,
  { size, mtimeMs, mode }: { size: number; mtimeMs: number; mode: number },
  rel: string,
  display: string,
): Promise<Step> {
  const fileLimit = walk.limits.fileBytes ?? walk.limits.bytes;
  if (size > fileLimit) {
    return overLimit(`${display} is ${size} bytes, more than the ${fileLimit} allowed for one file.`);
  }
  if (walk.bytes + size > walk.limits.bytes) {
    return overLimit(
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
    if (read !== size || after.size !== size || after.mtimeMs !== mtimeMs) return changed(display);
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
  return DONE;
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

/** A source root opened as a directory, never through a link. */
async function openRoot(root: string): Promise<Step<FileHandle>> {
  try {
    return ok(await open(root, DIR_FLAGS));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR")
      return unsafe(`The source root ${shown(root)} is not a directory (or is a symbolic link).`);
    if (code === "ENOENT") return unsafe(`The source root ${shown(root)} does not exist.`);
    return failedRead(shown(root), err);
  }
}

async function walkRoots(roots: readonly string[], limits: WalkLimits, dest: string): Promise<Step<Walk>> {
  const walk: Walk = { limits, entries: 0, bytes: 0, directories: [], files: [], dest };
  for (const root of roots) {
    const base = utf8ByteString(basename(root));
    const handle = await openRoot(root);
    if (!handle.ok) return handle;
    try {
      const counted = count(walk, shown(root));
      if (!counted.ok) return counted;
      walk.directories.push(base);
      // The root's own mode, as for every directory below it: not the staging area's 0700.
      await mkdir(under(dest, base), { mode: 0o700 });
      await chmod(under(dest, base), keptMode((await handle.value.stat()).mode, 0o700));
      const walked = await walkDirectory(walk, handle.value, base, shown(root), 1);
      if (!walked.ok) return walked;
    } finally {
      await handle.value.close();
    }
  }
  return ok(walk);
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
): Promise<Step<{ manifest: Manifest; id: string }>> {
  const problem = rootProblem(roots);
  if (problem !== null) return unsafe(problem);
  const walked = await walkRoots(roots, limits, dest);
  if (!walked.ok) return walked;
  const manifest = buildManifest(
    roots.map((r) => utf8ByteString(basename(r))),
    walked.value.directories,
    walked.value.files,
  );
  return ok({ manifest, id: manifestDigest(manifest) });
}

/**
 * Hash a tree in place under the same rules (a pulled copy of a run
 * directory): paths relative to `dir`, which itself is not listed.
 */
export async function hashTree(
  dir: string,
  limits: WalkLimits,
): Promise<Step<{ directories: string[]; files: ManifestFile[] }>> {
  const walk: Walk = { limits, entries: 0, bytes: 0, directories: [], files: [], dest: null };
  const handle = await reading(dir, open(dir, DIR_FLAGS));
  if (!handle.ok) return handle;
  try {
    const walked = await walkDirectory(walk, handle.value, "", shown(dir), 1);
    if (!walked.ok) return walked;
  } finally {
    await handle.value.close();
  }
  return ok({ directories: walk.directories, files: walk.files });
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
