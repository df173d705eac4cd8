import { lstatSync, type Stats, statSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Who may own the files the broker trusts (profiles, pinned known_hosts):
 * root, or the owner of the profile directory, and never the daemon's own
 * account when it runs as one, because a daemon able to rewrite what it
 * trusts would trust whatever it was tricked into writing.
 */
export interface TrustRule {
  /** The uid the daemon runs as. */
  daemonUid: number;
  /** Owners accepted besides root (the profile directory's owner). */
  owners: readonly number[];
}

/** The daemon runs as an account of its own (not root), so its uid must own nothing it trusts. */
function separateAccount(rule: TrustRule): boolean {
  return rule.daemonUid !== 0;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;
}

/** What is wrong with a directory whose contents the broker trusts; [] when nothing. */
export function directoryProblems(path: string, st: Stats, rule: TrustRule): string[] {
  const problems: string[] = [];
  if (!st.isDirectory()) problems.push(`${path} is not a directory`);
  if ((st.mode & 0o022) !== 0) {
    problems.push(`directory ${path} is writable by group or others (mode ${octal(st.mode)})`);
  }
  if (separateAccount(rule) && st.uid === rule.daemonUid) {
    problems.push(`directory ${path} is owned by the daemon's own uid ${rule.daemonUid}`);
  }
  return problems;
}

/**
 * What is wrong with one trusted file, looked at without following a link:
 * a symbolic link, something other than a regular file, write access for
 * group or others, an owner other than root or the accepted owners, or the
 * daemon's own account. [] when nothing.
 */
export function fileProblems(path: string, st: Stats, rule: TrustRule): string[] {
  if (st.isSymbolicLink()) return [`${path} is a symbolic link; trusted files must be regular files`];
  const problems: string[] = [];
  if (!st.isFile()) problems.push(`${path} is not a regular file`);
  if ((st.mode & 0o022) !== 0) {
    problems.push(`${path} is writable by group or others (mode ${octal(st.mode)})`);
  }
  if (separateAccount(rule) && st.uid === rule.daemonUid) {
    problems.push(`${path} is owned by the daemon's own uid ${rule.daemonUid}`);
  } else if (st.uid !== 0 && !rule.owners.includes(st.uid)) {
    problems.push(`${path} is owned by uid ${st.uid}, neither root nor the owner of the profile directory`);
  }
  return problems;
}

/**
 * fileProblems for a path, plus directoryProblems for its directory (written
 * by nobody but its owner, and not owned by the daemon's own account); a
 * missing file is named as such.
 */
export function trustedFileProblems(path: string, rule: TrustRule): string[] {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return [code === "ENOENT" ? `${path} does not exist` : `${path} cannot be read (${code ?? "error"})`];
  }
  const problems = fileProblems(path, st, rule);
  const dir = dirname(path);
  try {
    // The directory as the profile directory is held: a daemon that owns it could swap the file.
    problems.push(...directoryProblems(dir, statSync(dir), rule));
  } catch (err) {
    problems.push(`directory ${dir} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  return problems;
}

export { octal };
