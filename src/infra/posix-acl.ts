import { fail, ok, type Result } from "../core/index.js";
import { readXattr } from "../proc/index.js";

/**
 * Reading a file's POSIX access ACL as the kernel stores it: the extended
 * attribute `system.posix_acl_access`, read with lgetxattr(2) through koffi
 * (src/proc/libc.ts binds it). No process is started and no
 * text of getfacl's is parsed: the bytes are the kernel's own
 * (`struct posix_acl_xattr_header` then `posix_acl_xattr_entry`s, little
 * endian), read without following a link.
 */

/** One entry: its tag, its rwx bits, and the uid or gid of a named entry (null for the others). */
export interface AclEntry {
  tag: AclTag;
  perm: number;
  id: number | null;
}

type AclTag = "user_obj" | "user" | "group_obj" | "group" | "mask" | "other";

/** The ACL, or null when the file has none beyond its mode bits; a sentence when it cannot be read. */
type AclLookup = Result<AclEntry[] | null, string>;

const XATTR_NAME = "system.posix_acl_access";
const POSIX_ACL_XATTR_VERSION = 2;
const HEADER_BYTES = 4;
const ENTRY_BYTES = 8;
/** Far more than any ACL here holds; a longer one is refused rather than read in part. */
const MAX_ACL_BYTES = 4096;
const ENODATA = 61;
const ENOTSUP = 95;
const TAGS: Readonly<Record<number, AclTag>> = {
  1: "user_obj",
  2: "user",
  4: "group_obj",
  8: "group",
  16: "mask",
  32: "other",
};

/** Parse the value of `system.posix_acl_access`; null when it is not one. */
function parseAclXattr(value: Buffer): AclEntry[] | null {
  if (value.length < HEADER_BYTES || (value.length - HEADER_BYTES) % ENTRY_BYTES !== 0) return null;
  if (value.readUInt32LE(0) !== POSIX_ACL_XATTR_VERSION) return null;
  const entries: AclEntry[] = [];
  for (let at = HEADER_BYTES; at < value.length; at += ENTRY_BYTES) {
    const tag = TAGS[value.readUInt16LE(at)];
    if (tag === undefined) return null;
    const named = tag === "user" || tag === "group";
    entries.push({ tag, perm: value.readUInt16LE(at + 2), id: named ? value.readUInt32LE(at + 4) : null });
  }
  return entries;
}

/** The access ACL of `path` (not following a link). */
export function readAccessAcl(path: string): AclLookup {
  const read = readXattr(path, XATTR_NAME, MAX_ACL_BYTES);
  if (read === null) {
    return fail(`the ACL of ${path} cannot be read here (no getxattr through koffi)`);
  }
  if (!read.ok) {
    // No attribute, or a file system without ACLs: the mode bits are the whole story.
    if (read.error === ENODATA || read.error === ENOTSUP) return ok(null);
    return fail(`the ACL of ${path} cannot be read (errno ${read.error})`);
  }
  const entries = parseAclXattr(read.value);
  if (entries === null) return fail(`the ACL of ${path} is not one this broker can read`);
  return ok(entries);
}
