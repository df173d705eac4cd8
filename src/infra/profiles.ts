import { lstatSync, readdirSync, realpathSync, type Stats, statSync } from "node:fs";
import { basename, join } from "node:path";
import { RelayError } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { PROFILE_ID } from "../infra-protocol/index.js";
import { directoryProblems, fileProblems, type TrustRule, trustedFileProblems } from "./file-trust.js";
import { describeIssues, type ProfileFile, profileFileSchema } from "./profile-schema.js";
import type { BrokenProfile, Profile, ProfileSet } from "./types.js";

/** At most this many profile files are read; the rest are reported broken, not skipped. */
export const MAX_PROFILES = 256;
/** A profile file larger than this is refused before it is read. */
export const MAX_PROFILE_BYTES = 64 * 1024;

/**
 * Read every `<id>.json` profile of the operator's profile directory
 * (docs/infra-broker.md §Profiles). Each file is either a usable Profile or
 * a BrokenProfile listing every problem found; nothing is skipped silently.
 * Files whose names do not end in `.json` are not profiles and are ignored.
 *
 * Throws a RelayError only when the directory itself cannot be listed.
 */
export function loadProfiles(dir: string, options: { daemonUid: number }): ProfileSet {
  let dirStat: Stats;
  let names: string[];
  try {
    dirStat = statSync(dir);
    names = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    throw new RelayError("ValueError", `profile directory ${dir} cannot be read (${code})`, {
      code: "profile_dir_unreadable",
      cause: err,
    });
  }
  const rule: TrustRule = { daemonUid: options.daemonUid, owners: [dirStat.uid] };
  const dirProblems = directoryProblems(dir, dirStat, rule);

  const profiles = new Map<string, Profile>();
  const broken = new Map<string, BrokenProfile>();
  const files = names.filter((name) => name.endsWith(".json")).sort();
  files.forEach((name, index) => {
    const id = name.slice(0, -".json".length);
    const file = join(dir, name);
    if (index >= MAX_PROFILES) {
      broken.set(id, {
        id,
        file,
        problems: [`more than ${MAX_PROFILES} profile files; this one was not read`],
      });
      return;
    }
    const result = loadOne(id, file, rule, dirProblems);
    if ("problems" in result) broken.set(id, result);
    else profiles.set(id, result);
  });
  return { profiles, broken };
}

function loadOne(id: string, file: string, rule: TrustRule, dirProblems: string[]): Profile | BrokenProfile {
  const problems = [...dirProblems];
  if (!PROFILE_ID.test(id)) {
    problems.push(
      `${JSON.stringify(basename(file))} is not <id>.json with an id of [a-z0-9][a-z0-9_-]{0,63}`,
    );
  }
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch (err) {
    problems.push(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    return { id, file, problems };
  }
  const trust = fileProblems(file, st, rule);
  problems.push(...trust);
  // A link is not followed at all: what it points to was never checked.
  if (st.isSymbolicLink() || !st.isFile()) return { id, file, problems };

  const parsed = parseFile(file);
  if (typeof parsed === "string") {
    problems.push(parsed);
    return { id, file, problems };
  }
  const checked = profileFileSchema.safeParse(parsed);
  if (!checked.success) {
    problems.push(...describeIssues(checked.error));
    return { id, file, problems };
  }
  problems.push(...fileSystemProblems(checked.data, rule));
  if (problems.length > 0) return { id, file, problems };
  return toProfile(id, file, checked.data);
}

/** The file's JSON value, or a sentence saying why there is none. */
function parseFile(file: string): unknown {
  let bytes: Buffer | null;
  try {
    bytes = readBoundedFile(file, { maxBytes: MAX_PROFILE_BYTES, what: "profile" });
  } catch (err) {
    return err instanceof RelayError
      ? err.message
      : `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`;
  }
  if (bytes === null) return `${file} disappeared while it was read`;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return `${file} is not UTF-8 text`;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    return `${file} is not valid JSON (${(err as Error).message})`;
  }
}

/** What the file system says about the paths a schema-valid profile names. */
function fileSystemProblems(data: ProfileFile, rule: TrustRule): string[] {
  const problems: string[] = [];
  const names = new Map<string, string>();
  for (const root of data.source_roots) {
    let st: Stats;
    try {
      st = lstatSync(root);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problems.push(
        `source_roots: ${root} ${code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? "error"})`}`,
      );
      continue;
    }
    if (st.isSymbolicLink()) {
      problems.push(`source_roots: ${root} is a symbolic link; name the directory it points to`);
    } else if (!st.isDirectory()) {
      problems.push(`source_roots: ${root} is not a directory`);
    } else if (realpathSync(root) !== root) {
      // A link above the root would let whoever controls it move the snapshot elsewhere.
      problems.push(`source_roots: ${root} passes through a symbolic link (it is ${realpathSync(root)})`);
    }
    const base = basename(root);
    const other = names.get(base);
    if (other !== undefined) {
      problems.push(`source_roots: ${root} and ${other} share the base name ${JSON.stringify(base)}`);
    }
    names.set(base, root);
  }
  for (const problem of trustedFileProblems(data.known_hosts, rule)) problems.push(`known_hosts: ${problem}`);
  return problems;
}

function toProfile(id: string, file: string, data: ProfileFile): Profile {
  return {
    id,
    file,
    enabled: data.enabled,
    host: data.host,
    port: data.port,
    user: data.user,
    sourceRoots: [...data.source_roots],
    remoteRoot: data.remote_root,
    knownHostsFile: data.known_hosts,
    credentialId: data.credential,
    limits: {
      timeoutSeconds: data.limits.timeout_seconds,
      outputBytes: data.limits.output_bytes,
      transferBytes: data.limits.transfer_bytes,
      fileCount: data.limits.file_count,
    },
    allowedPrincipals: {
      uids: [...data.allowed_principals.uids],
      gids: [...data.allowed_principals.gids],
    },
    approval: data.approval,
    receiver: data.receiver,
    requireDryRun: data.require_dry_run,
  };
}
