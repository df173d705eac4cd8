import type { FileEntryWithStats } from "ssh2";
import { type RemoteFs, remoteJoin } from "./sftp-fs.js";
import { MAX_NAME_BYTES } from "./transfer-limits.js";

/** What a download does with each entry a listing brings, as it arrives. */
export interface ListingHooks {
  /** Called once per entry before it is looked at: the place to count it and to stop a cancelled copy. */
  entry(): void;
  /** An entry the copy cannot take (its path inside the remote tree). */
  unusable(path: string): void;
}

/**
 * Whether a name a server listed cannot be copied (then it is skipped). The
 * server names the entries: nothing it sends may lead outside the destination
 * tree, and nothing it sends may fail the whole copy (a NUL cannot be in a
 * local file name at all; a name longer than NAME_MAX cannot be created).
 */
function unusableName(name: string, seen: ReadonlySet<string>): boolean {
  return (
    name === "" ||
    name === "." ||
    name === ".." ||
    name.includes("/") ||
    name.includes("\0") ||
    Buffer.byteLength(name, "utf8") > MAX_NAME_BYTES ||
    seen.has(name)
  );
}

/**
 * The entries of a remote directory a download may copy, in name order, each
 * as lstat would see it (a link is a link, not what it points to). Replies are
 * read one at a time and every entry goes through `hooks.entry` as it arrives,
 * so an endless listing stops at the caller's bound instead of filling memory.
 */
export async function readCopyableEntries(
  remote: RemoteFs,
  dir: string,
  hooks: ListingHooks,
): Promise<FileEntryWithStats[]> {
  const seen = new Set<string>();
  const accept = (entry: FileEntryWithStats) => {
    hooks.entry();
    const name = entry.filename;
    if (unusableName(name, seen)) {
      hooks.unusable(remoteJoin(dir, name));
      return false;
    }
    seen.add(name);
    // Keep the name and attributes only: the long listing line is the server's text, unused here.
    entry.longname = "";
    return true;
  };
  const entries = await remote.listDir(dir, accept);
  return entries.sort((a, b) => (a.filename < b.filename ? -1 : 1));
}
