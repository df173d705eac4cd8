import { accessSync, constants, lstatSync, realpathSync, type Stats, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

/** Whose process is asking: the uid the relay runs as. */
export interface TrustAnchorOwner {
  selfUid: number;
}

const STICKY = 0o1000;

function mode(st: Stats): string {
  return `mode 0${(st.mode & 0o7777).toString(8).padStart(3, "0")}`;
}

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}

function canAccess(path: string, how: number): boolean {
  try {
    accessSync(path, how);
    return true;
  } catch {
    return false;
  }
}

function writableBy(st: Stats): string {
  const group = (st.mode & 0o020) !== 0;
  const others = (st.mode & 0o002) !== 0;
  return group && others ? "group and others" : group ? "its group" : "others";
}

/**
 * Every directory whose entries decide what `file` is: its lexical
 * ancestors (a link among them is an entry of the next one up) and the
 * ancestors of its real directory (where a link leads). Each comes with the
 * entry below it on the way to the file.
 */
function directoriesAbove(file: string): { dir: string; child: string }[] {
  const out = new Map<string, string>();
  const walk = (start: string, child: string) => {
    let entry = child;
    let dir = start;
    for (;;) {
      if (!out.has(dir)) out.set(dir, entry);
      const up = dirname(dir);
      if (up === dir) break;
      entry = dir;
      dir = up;
    }
  };
  walk(dirname(file), file);
  try {
    const real = realpathSync(dirname(file));
    walk(real, join(real, basename(file)));
  } catch {
    // The lexical walk reports a directory that cannot be resolved.
  }
  return [...out].map(([dir, child]) => ({ dir, child }));
}

/**
 * In a sticky directory (/tmp) only an entry's owner, the directory's owner
 * or root may rename or remove the entry, so whoever else may write there
 * cannot replace the entry below.
 */
function stickyGuards(st: Stats, child: string, selfUid: number): boolean {
  if ((st.mode & STICKY) === 0 || st.uid === selfUid || selfUid === 0) return false;
  try {
    return lstatSync(child).uid !== selfUid;
  } catch {
    return false;
  }
}

function directoryProblems(dir: string, child: string, selfUid: number): string[] {
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (err) {
    return [`directory ${dir} cannot be examined (${errno(err)})`];
  }
  const problems: string[] = [];
  const guarded = stickyGuards(st, child, selfUid);
  if ((st.mode & 0o022) !== 0 && !guarded) {
    problems.push(
      `directory ${dir} is writable by ${writableBy(st)} (${mode(st)}), who could replace what it holds`,
    );
  }
  // As root every directory is the relay's to write; the file's own check says so once.
  if (selfUid !== 0) {
    if (st.uid === selfUid) {
      problems.push(
        `directory ${dir} is owned by the relay's own uid ${selfUid}, which could replace what it holds`,
      );
    } else if (!guarded && canAccess(dir, constants.W_OK)) {
      problems.push(
        `directory ${dir} is writable by the relay's process (uid ${selfUid}), which could replace what it holds`,
      );
    }
  }
  return problems;
}

/**
 * What makes a file the relay trusts (an allowed-signers file, any trust
 * anchor) unsafe to trust; [] when nothing does. The relay must not be able
 * to change it, or a command the relay runs could enrol its own key: the
 * file must exist and be readable, be a regular file reached without a
 * symbolic link, be writable by nobody but its owner, not be owned by the
 * relay's account, not be writable by this process, and sit in directories
 * (up to `/`) that neither the relay nor anyone but their owner can write
 * (a sticky directory protects entries others own). A relay running as root
 * can write everything, so as root the answer is never [].
 */
export function trustAnchorProblems(path: string, owner: TrustAnchorOwner): string[] {
  const file = resolve(path);
  const { selfUid } = owner;
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch (err) {
    const code = errno(err);
    return [code === "ENOENT" ? `${file} does not exist` : `${file} cannot be examined (${code})`];
  }
  const problems: string[] = [];
  if (st.isSymbolicLink()) {
    problems.push(
      `${file} is a symbolic link; a trust anchor must be the regular file itself, not a link to one`,
    );
  } else if (!st.isFile()) {
    problems.push(`${file} is not a regular file`);
  } else {
    if ((st.mode & 0o022) !== 0) {
      problems.push(`${file} is writable by ${writableBy(st)} (${mode(st)}); only its owner may write it`);
    }
    if (st.uid === selfUid) {
      problems.push(`${file} is owned by the relay's own uid ${selfUid}, which could rewrite it`);
    }
    if (!canAccess(file, constants.R_OK)) problems.push(`${file} cannot be read by the relay's process`);
    if (selfUid !== 0 && canAccess(file, constants.W_OK)) {
      problems.push(`${file} is writable by the relay's process (uid ${selfUid})`);
    }
  }
  if (selfUid === 0) {
    // Even where access(2) says no (a read-only mount), root can remount, chmod or replace.
    problems.push(
      `${file} is writable by the relay's process: it runs as root, which may write any file, so a relay running as root can never trust a file; run it under an account of its own`,
    );
  }
  for (const { dir, child } of directoriesAbove(file))
    problems.push(...directoryProblems(dir, child, selfUid));
  return problems;
}
