import { lstatSync, mkdtempSync, readdirSync, rmSync, type Stats, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fail, ok, RelayError, type Result } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { octal } from "./file-trust.js";
import { type AclEntry, readAccessAcl } from "./posix-acl.js";

/** A private key larger than this is not a key. */
export const MAX_KEY_BYTES = 16 * 1024;

/** Where the broker may find keys: systemd's credentials directory, or the explicit fallback. */
export interface CredentialSources {
  credentialsDirectory: string | null;
  keyFileDirectory: string | null;
  daemonUid: number;
}

/** The key's bytes, or a sentence naming the path and what is wrong with it, never the bytes. */
type KeyLookup = Result<{ bytes: Buffer; path: string }, string>;

/**
 * Read the private key of `credentialId` (docs/infra-broker.md §Credentials):
 * `$CREDENTIALS_DIRECTORY/<id>` first, then, only when the daemon was started
 * with the fallback, `<key file directory>/<id>`. The file must be a regular
 * file (not a link), owned by root or the daemon's uid, readable by its owner
 * alone (0600 or 0400), or by its owner and, through systemd's credential
 * ACL, the daemon's uid alone (0440, see credentialAclProblem).
 */
export function readCredential(credentialId: string, sources: CredentialSources): KeyLookup {
  const dirs = [sources.credentialsDirectory, sources.keyFileDirectory].filter(
    (d): d is string => d !== null,
  );
  if (dirs.length === 0) {
    return fail(
      "no credential source: the daemon has no $CREDENTIALS_DIRECTORY (systemd LoadCredential=) and was not started with --allow-key-file",
    );
  }
  const missing: string[] = [];
  for (const dir of dirs) {
    const path = join(dir, credentialId);
    let st: Stats;
    try {
      st = lstatSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        missing.push(path);
        continue;
      }
      return fail(`the key ${path} cannot be read (${(err as NodeJS.ErrnoException).code})`);
    }
    const problem = keyFileProblem(path, st, sources.daemonUid) ?? keyDirectoryProblem(dir);
    if (problem !== null) return fail(problem);
    try {
      const bytes = readBoundedFile(path, { maxBytes: MAX_KEY_BYTES, what: "key" });
      if (bytes === null) return fail(`the key ${path} disappeared while it was read`);
      return ok({ bytes, path });
    } catch (err) {
      const text =
        err instanceof RelayError
          ? err.message
          : `the key ${path} cannot be read (${(err as NodeJS.ErrnoException).code})`;
      return fail(text);
    }
  }
  return fail(`no key for credential ${credentialId}: ${missing.join(" and ")} not found`);
}

function keyFileProblem(path: string, st: Stats, daemonUid: number): string | null {
  if (st.isSymbolicLink()) return `the key ${path} is a symbolic link; a key must be a regular file`;
  if (!st.isFile()) return `the key ${path} is not a regular file`;
  const mode = st.mode & 0o7777;
  if (mode === 0o440) {
    const problem = credentialAclProblem(path, daemonUid);
    if (problem !== null) return problem;
  } else if (mode !== 0o600 && mode !== 0o400) {
    return `the key ${path} has mode ${octal(mode)}; only 0600 or 0400, or 0440 with systemd's credential ACL, is accepted`;
  }
  if (st.uid !== 0 && st.uid !== daemonUid) {
    return `the key ${path} is owned by uid ${st.uid}; only root or the daemon's uid ${daemonUid} is accepted`;
  }
  return null;
}

const PERMS = ["---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx"];

function showAcl(entries: readonly AclEntry[]): string {
  return entries
    .map((e) => `${e.tag.replace("_obj", "")}:${e.id ?? ""}:${PERMS[e.perm & 7] ?? "?"}`)
    .join(",");
}

/**
 * A 0440 key is the shape systemd's LoadCredential= gives a service that runs
 * as its own user: root's file, mode 0400, plus an ACL entry granting that
 * user read, which makes the mask (shown as the group bits) r. Accepted only
 * when the ACL is exactly that: owner r, one named user (the daemon's uid) r,
 * owning group nothing, mask r, other nothing. A named group, another user,
 * write or execute anywhere, or group read is refused: any of them lets
 * someone besides the daemon read the key, or change it.
 */
function credentialAclProblem(path: string, daemonUid: number): string | null {
  const acl = readAccessAcl(path);
  if (!acl.ok) return `the key ${path} has mode 0440 and ${acl.error}`;
  if (acl.value === null) {
    return `the key ${path} has mode 0440 and no ACL, so its group may read it; only 0600 or 0400, or 0440 with systemd's credential ACL, is accepted`;
  }
  const expected: AclEntry[] = [
    { tag: "user_obj", perm: 4, id: null },
    { tag: "user", perm: 4, id: daemonUid },
    { tag: "group_obj", perm: 0, id: null },
    { tag: "mask", perm: 4, id: null },
    { tag: "other", perm: 0, id: null },
  ];
  const found = showAcl(acl.value);
  if (found !== showAcl(expected)) {
    return `the key ${path} has mode 0440 with the ACL ${found}; only ${showAcl(expected)} (systemd's credential ACL for the daemon's uid alone) is accepted`;
  }
  return null;
}

function keyDirectoryProblem(dir: string): string | null {
  try {
    const st = statSync(dir);
    if ((st.mode & 0o022) !== 0) {
      return `the key directory ${dir} is writable by group or others (mode ${octal(st.mode)})`;
    }
  } catch (err) {
    return `the key directory ${dir} cannot be read (${(err as NodeJS.ErrnoException).code})`;
  }
  return null;
}

/** Prefix of the private directories that hold a key (and serve as HOME) while ssh runs. */
const PRIVATE_DIR_PREFIX = ".ssh-home-";

/**
 * Run `work` in a fresh 0700 directory under `stateDir`, the child's HOME,
 * removed afterwards whatever happens.
 */
export async function withPrivateDir<T>(stateDir: string, work: (home: string) => Promise<T>): Promise<T> {
  const home = mkdtempSync(join(stateDir, PRIVATE_DIR_PREFIX));
  try {
    return await work(home);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * Run `work` with the key written to a private file: a 0600 file in a fresh
 * 0700 directory under `stateDir` (see withPrivateDir). The caller's copy of
 * the bytes is overwritten as soon as they are on disk.
 */
export async function withKeyFile<T>(
  stateDir: string,
  key: Buffer,
  work: (paths: { keyFile: string; home: string }) => Promise<T>,
): Promise<T> {
  return withPrivateDir(stateDir, async (home) => {
    const keyFile = join(home, "id");
    try {
      writeFileSync(keyFile, key, { mode: 0o600, flag: "wx" });
    } finally {
      key.fill(0);
    }
    return work({ keyFile, home });
  });
}

/** Remove key directories a crashed daemon left behind (called once when the transport is built). */
export function sweepKeyFiles(stateDir: string): void {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch (err) {
    // No state directory yet: nothing can have been left in it.
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  for (const name of names) {
    if (name.startsWith(PRIVATE_DIR_PREFIX)) rmSync(join(stateDir, name), { recursive: true, force: true });
  }
}
