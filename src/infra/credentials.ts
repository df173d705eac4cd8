import { lstatSync, mkdtempSync, readdirSync, rmSync, type Stats, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RelayError } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { octal } from "./file-trust.js";

/** A private key larger than this is not a key. */
export const MAX_KEY_BYTES = 16 * 1024;

/** Where the broker may find keys: systemd's credentials directory, or the explicit fallback. */
export interface CredentialSources {
  credentialsDirectory: string | null;
  keyFileDirectory: string | null;
  daemonUid: number;
}

/** The key's bytes, or a sentence naming the path and what is wrong with it, never the bytes. */
export type KeyLookup = { ok: true; bytes: Buffer; path: string } | { ok: false; message: string };

/**
 * Read the private key of `credentialId` (docs/infra-broker.md §Credentials):
 * `$CREDENTIALS_DIRECTORY/<id>` first, then, only when the daemon was started
 * with the fallback, `<key file directory>/<id>`. The file must be a regular
 * file (not a link), owned by root or the daemon's uid, readable by its owner
 * alone (0600 or 0400).
 */
export function readCredential(credentialId: string, sources: CredentialSources): KeyLookup {
  const dirs = [sources.credentialsDirectory, sources.keyFileDirectory].filter(
    (d): d is string => d !== null,
  );
  if (dirs.length === 0) {
    return {
      ok: false,
      message:
        "no credential source: the daemon has no $CREDENTIALS_DIRECTORY (systemd LoadCredential=) and was not started with --allow-key-file",
    };
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
      return {
        ok: false,
        message: `the key ${path} cannot be read (${(err as NodeJS.ErrnoException).code})`,
      };
    }
    const problem = keyFileProblem(path, st, sources.daemonUid) ?? keyDirectoryProblem(dir);
    if (problem !== null) return { ok: false, message: problem };
    try {
      const bytes = readBoundedFile(path, { maxBytes: MAX_KEY_BYTES, what: "key" });
      if (bytes === null) return { ok: false, message: `the key ${path} disappeared while it was read` };
      return { ok: true, bytes, path };
    } catch (err) {
      const text =
        err instanceof RelayError
          ? err.message
          : `the key ${path} cannot be read (${(err as NodeJS.ErrnoException).code})`;
      return { ok: false, message: text };
    }
  }
  return { ok: false, message: `no key for credential ${credentialId}: ${missing.join(" and ")} not found` };
}

function keyFileProblem(path: string, st: Stats, daemonUid: number): string | null {
  if (st.isSymbolicLink()) return `the key ${path} is a symbolic link; a key must be a regular file`;
  if (!st.isFile()) return `the key ${path} is not a regular file`;
  const mode = st.mode & 0o7777;
  if (mode !== 0o600 && mode !== 0o400) {
    return `the key ${path} has mode ${octal(mode)}; only 0600 or 0400 is accepted`;
  }
  if (st.uid !== 0 && st.uid !== daemonUid) {
    return `the key ${path} is owned by uid ${st.uid}; only root or the daemon's uid ${daemonUid} is accepted`;
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
