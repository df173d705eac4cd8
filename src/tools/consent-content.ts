import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { lstat, open, opendir, readlink, stat } from "node:fs/promises";
import { join } from "node:path";
import { canonicalJson, describeError, RelayError } from "../core/index.js";

/** The bounds of an upload (RELAY_SHELL_TRANSFER_MAX_BYTES / _MAX_ENTRIES): what the digest may read. */
export interface ContentLimits {
  maxBytes: number;
  maxEntries: number;
}

/** What an upload will send, as a consent approval binds it. Plain JSON. */
export type LocalContent =
  | {
      type: "file";
      size: number;
      mode: string;
      sha256: string;
      /** The link's target text when the path named is a symlink (the transfer sends what it points to). */
      link: string | null;
    }
  | {
      type: "directory";
      /** The root's permission bits, which the transfer gives the copy. */
      mode: string;
      /** Entries below the root (files, directories, symlinks, skipped). */
      entries: number;
      files: number;
      bytes: number;
      /** sha256 of the canonical JSON list of entries sorted by path. */
      sha256: string;
      link: string | null;
    };

/** One entry of a tree's digest: what the transfer recreates at that relative path. */
type TreeEntry =
  | { path: string; type: "directory"; mode: string }
  | { path: string; type: "file"; mode: string; size: number; sha256: string }
  | { path: string; type: "symlink"; target: string }
  | { path: string; type: "skipped" };

/** The transfer's own depth bound (ssh/transfer-limits MAX_TRANSFER_DEPTH). */
const MAX_DEPTH = 128;
/** Permission bits: what the transfer keeps of a mode. */
const MODE_BITS = 0o7777;
const CHUNK = 64 * 1024;

function refusal(message: string): RelayError {
  return new RelayError("ValueError", message);
}

function octal(mode: number): string {
  return (mode & MODE_BITS).toString(8).padStart(4, "0");
}

/** Meters what the digest has read against the transfer's bounds: past them the transfer would stop too. */
class Budget {
  entries = 0;
  bytes = 0;
  constructor(private readonly limits: ContentLimits) {}
  entry(path: string): void {
    this.entries++;
    if (this.entries > this.limits.maxEntries) {
      throw refusal(
        `${path}: more than ${this.limits.maxEntries} entries (RELAY_SHELL_TRANSFER_MAX_ENTRIES); ` +
          "the upload would be stopped, so its content cannot be bound",
      );
    }
  }
  reserve(size: number, path: string): void {
    if (this.bytes + size > this.limits.maxBytes) {
      throw refusal(
        `${path}: the upload holds more than ${this.limits.maxBytes} bytes (RELAY_SHELL_TRANSFER_MAX_BYTES); ` +
          "it would be stopped, so its content cannot be bound",
      );
    }
    this.bytes += size;
  }
}

/**
 * sha256 of one regular file, read through a descriptor opened without
 * following a final symlink (unless `follow`, for the path the caller named)
 * and without blocking on a FIFO; the descriptor must be a regular file of
 * the size lstat saw, and no more than that size is read, so a file swapped
 * or grown under the walk is a refusal, not a silent difference.
 */
async function fileDigest(path: string, expected: Stats, follow: boolean): Promise<string> {
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (follow ? 0 : constants.O_NOFOLLOW);
  const handle = await open(path, flags);
  try {
    const st = await handle.stat();
    if (!st.isFile() || st.ino !== expected.ino || st.dev !== expected.dev || st.size !== expected.size) {
      throw refusal(`${path} changed while its content was being read`);
    }
    const hash = createHash("sha256");
    const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(1, st.size)));
    let done = 0;
    while (done < st.size) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, st.size - done), done);
      if (bytesRead === 0) throw refusal(`${path} shrank while its content was being read`);
      hash.update(buffer.subarray(0, bytesRead));
      done += bytesRead;
    }
    return hash.digest("hex");
  } finally {
    await handle.close();
  }
}

async function walk(root: string, budget: Budget): Promise<TreeEntry[]> {
  const out: TreeEntry[] = [];
  const stack: Array<{ local: string; rel: string; depth: number }> = [{ local: root, rel: "", depth: 0 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    // Counted as they are read: a directory of millions of names is refused before it is held in memory.
    const names: string[] = [];
    for await (const dirent of await opendir(next.local)) {
      budget.entry(join(next.local, dirent.name));
      names.push(dirent.name);
    }
    for (const name of names.sort()) {
      const local = join(next.local, name);
      const rel = next.rel === "" ? name : `${next.rel}/${name}`;
      const st = await lstat(local);
      // Inside a tree the transfer copies a symlink as a link, never through it: bind its text.
      if (st.isSymbolicLink()) out.push({ path: rel, type: "symlink", target: await readlink(local) });
      else if (st.isDirectory()) {
        if (next.depth + 1 > MAX_DEPTH) throw refusal(`${local} is more than ${MAX_DEPTH} directories deep`);
        out.push({ path: rel, type: "directory", mode: octal(st.mode) });
        stack.push({ local, rel, depth: next.depth + 1 });
      } else if (st.isFile()) {
        budget.reserve(st.size, local);
        out.push({
          path: rel,
          type: "file",
          mode: octal(st.mode),
          size: st.size,
          sha256: await fileDigest(local, st, false),
        });
      } else out.push({ path: rel, type: "skipped" });
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * What an upload of `path` will send, computed the way the transfer walks it
 * (ssh/sftp.ts uploadTree): the path named is followed when it is a symlink,
 * as the transfer follows it, but never silently: the link's text is bound
 * beside the content, so the human sees where it points. Below the root
 * nothing is followed: a symlink is bound by its target text, as it is
 * copied. Reading stops at the transfer's own bounds (bytes, entries, depth);
 * past them the upload could not run either, so the act is refused rather
 * than bound to part of its content. Throws a RelayError with the reason.
 */
export async function localContent(
  path: string,
  recursive: boolean,
  limits: ContentLimits,
): Promise<LocalContent> {
  try {
    const named = await lstat(path);
    const link = named.isSymbolicLink() ? await readlink(path) : null;
    const source = link === null ? named : await stat(path);
    const budget = new Budget(limits);
    budget.entry(path);
    if (source.isDirectory()) {
      if (!recursive) throw refusal(`${path} is a directory; pass recursive=true to copy a tree`);
      const entries = await walk(path, budget);
      const files = entries.filter((e) => e.type === "file").length;
      const sha256 = createHash("sha256").update(canonicalJson(entries)).digest("hex");
      return {
        type: "directory",
        mode: octal(source.mode),
        entries: entries.length,
        files,
        bytes: budget.bytes,
        sha256,
        link,
      };
    }
    if (!source.isFile()) throw refusal(`${path} is not a regular file or a directory`);
    budget.reserve(source.size, path);
    const sha256 = await fileDigest(path, source, true);
    return { type: "file", size: source.size, mode: octal(source.mode), sha256, link };
  } catch (err) {
    if (err instanceof RelayError) throw err;
    const { type, message } = describeError(err);
    throw refusal(`cannot read ${path} to bind its content: ${type}: ${message}`);
  }
}
