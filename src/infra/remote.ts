import { lstatSync, readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute } from "node:path";
import { fail, ok, RelayError, truncateUtf8 } from "../core/index.js";
import type { ProcessOutcome } from "../exec/index.js";
import type { OutcomeCode } from "../infra-protocol/index.js";
import { readCredential, sweepKeyFiles, withKeyFile, withPrivateDir } from "./credentials.js";
import { trustedFileProblems } from "./file-trust.js";
import { ARGV_UNSAFE } from "./profile-schema.js";
import {
  CONFINEMENT_CHECKS,
  childEnvironment,
  classifyFailure,
  endpoint,
  knownHostsName,
  RSYNC_PROGRAM,
  remoteSpec,
  rsyncShell,
  SSH_KEYGEN_PROGRAM,
} from "./ssh-args.js";
import type { InfraContext, Profile, Remote, RemoteResult } from "./types.js";

/** Options of the transport that do not come from a profile. */
export interface RemoteOptions {
  /** `$CREDENTIALS_DIRECTORY` (systemd LoadCredential=), or null. */
  credentialsDirectory: string | null;
  /**
   * The explicit fallback (`--allow-key-file`): `<dir>/<credential id>`, tried after the credentials
   * directory; the directory writable by its owner alone, each key 0600 or 0400.
   */
  keyFileDirectory: string | null;
  /** The uid the daemon runs as; the process's effective uid when absent. */
  daemonUid?: number;
}

/** Characters of ssh/rsync output kept in a failure's `detail`. */
const DETAIL_BYTES = 2048;
/** ssh-keygen -F prints the matching lines: a few hundred bytes per key. */
const KEYGEN_OUTPUT_BYTES = 64 * 1024;
const KEYGEN_TIMEOUT_MS = 10_000;
/** Bound of a listing or preview per file of the profile's file_count: a line with a long path. */
const LISTING_BYTES_PER_FILE = 640;
/** No listing is held in memory beyond this, whatever the profile allows. */
const MAX_LISTING_BYTES = 64 * 1024 * 1024;

/**
 * The ssh/rsync transport (docs/infra-broker.md §Transport): fixed argument
 * vectors built from the profile, the key handed over in a private file
 * that exists only while its process runs, every process started through
 * the context's ProcessRunner with the profile's time and output bounds,
 * and every failure mapped to an outcome code.
 */
export function createRemote(ctx: Omit<InfraContext, "remote">, options: RemoteOptions): Remote {
  if (!isAbsolute(ctx.stateDir) || ARGV_UNSAFE.test(ctx.stateDir)) {
    // The key file lives under it and its path is one word of rsync's -e.
    throw new RelayError(
      "ValueError",
      `state directory ${JSON.stringify(ctx.stateDir)} must be an absolute path without whitespace, quotes, '\\', '\`' or '$'`,
    );
  }
  sweepKeyFiles(ctx.stateDir);
  const daemonUid = options.daemonUid ?? process.geteuid?.() ?? 0;
  const t: Transport = {
    ctx,
    daemonUid,
    sources: {
      credentialsDirectory: options.credentialsDirectory,
      keyFileDirectory: options.keyFileDirectory,
      daemonUid,
    },
  };
  return {
    preflight: (profile) => preflight(t, profile),
    probe: (profile) => probe(t, profile),
    list(profile, remotePath) {
      const target = spec(profile, remotePath);
      return rsync(t, profile, {
        what: `listing ${remotePath}`,
        write: false,
        missingCode: "RUN_NOT_FOUND",
        needsWholeOutput: true,
        args: ["--list-only", "--no-h", "-r", "--", target],
      });
    },
    push: (profile, localDir, remotePath, options) => push(t, profile, localDir, remotePath, options.dryRun),
    pull: (profile, remotePath, localDir, maxBytes) => pull(t, profile, remotePath, localDir, maxBytes),
  };
}

/** The daemon's context and where the profiles' keys are read from. */
interface Transport {
  ctx: Omit<InfraContext, "remote">;
  daemonUid: number;
  sources: { credentialsDirectory: string | null; keyFileDirectory: string | null; daemonUid: number };
}

interface RsyncRun {
  what: string;
  write: boolean;
  missingCode: OutcomeCode;
  /** A listing or preview cut by the output bound would be read as complete: refuse it instead. */
  needsWholeOutput: boolean;
  args: string[];
}

async function runChild(
  t: Transport,
  argv: string[],
  home: string,
  profile: Profile | null,
  outputBytes = profile === null ? KEYGEN_OUTPUT_BYTES : profile.limits.outputBytes,
): Promise<ProcessOutcome> {
  return t.ctx.runner.run({
    argv,
    env: childEnvironment(home),
    timeoutMs: profile === null ? KEYGEN_TIMEOUT_MS : profile.limits.timeoutSeconds * 1000,
    maxBufferBytes: outputBytes,
    mergeStderr: false,
  });
}

/** The pin file exists, is trusted, and names the profile's host; null when so. */
async function checkPin(t: Transport, profile: Profile): Promise<RemoteResult | null> {
  const pin = profile.knownHostsFile;
  try {
    lstatSync(pin);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return refused("PIN_MISSING", `the pin file ${pin} does not exist`);
    return refused("PIN_MISSING", `the pin file ${pin} cannot be read (${code ?? "error"})`);
  }
  // Checked again at each use, as the loader checked it: the file may have changed since.
  const problems = trustedFileProblems(pin, { daemonUid: t.daemonUid, owners: profileDirOwner(profile) });
  if (problems.length > 0) {
    return refused("PROFILE_INVALID", `the pin file is not trusted: ${problems.join("; ")}`);
  }
  const name = knownHostsName(profile);
  let outcome: ProcessOutcome;
  try {
    outcome = await withPrivateDir(t.ctx.stateDir, (home) =>
      runChild(t, [SSH_KEYGEN_PROGRAM, "-F", name, "-f", pin], home, null),
    );
  } catch (err) {
    return cannotStart(SSH_KEYGEN_PROGRAM, err);
  }
  if (outcome.exitCode === 0 && !outcome.timedOut) return null;
  if (outcome.exitCode === 1) {
    return refused(
      "PIN_MISSING",
      `the pin file ${pin} has no key for ${name}; add the receiver's host key to it (keys are never learned on first use)`,
    );
  }
  return refused(
    "PROFILE_INVALID",
    `ssh-keygen could not read the pin file ${pin} (exit ${outcome.exitCode ?? "none"})`,
    outcome.output,
  );
}

/**
 * A listing or a preview has a line per file, so its bound follows the
 * profile's file_count (a run the broker may replicate must also be one it
 * can list back for verify), within a hard ceiling; never below output_bytes.
 */
function wholeOutputBudget(profile: Profile): number {
  const perFile = profile.limits.fileCount * LISTING_BYTES_PER_FILE;
  return Math.max(profile.limits.outputBytes, Math.min(perFile, MAX_LISTING_BYTES));
}

/** One rsync run with the profile's key; a RemoteResult when it could not start. */
async function connect(
  t: Transport,
  profile: Profile,
  args: string[],
  outputBytes: number,
): Promise<ProcessOutcome | RemoteResult> {
  const key = readCredential(profile.credentialId, t.sources);
  if (!key.ok) return refused("CREDENTIAL_UNAVAILABLE", key.error);
  try {
    return await withKeyFile(t.ctx.stateDir, key.value.bytes, ({ keyFile, home }) =>
      runChild(t, [RSYNC_PROGRAM, "-e", rsyncShell(profile, keyFile), ...args], home, profile, outputBytes),
    );
  } catch (err) {
    return cannotStart(RSYNC_PROGRAM, err);
  }
}

async function rsync(t: Transport, profile: Profile, run: RsyncRun): Promise<RemoteResult> {
  const pin = await checkPin(t, profile);
  if (pin !== null) return pin;
  const budget = run.needsWholeOutput ? wholeOutputBudget(profile) : profile.limits.outputBytes;
  const outcome = await connect(t, profile, run.args, budget);
  if ("ok" in outcome) return outcome;
  if (outcome.exitCode === 0 && !outcome.timedOut) {
    if (run.needsWholeOutput && outcome.droppedBytes > 0) {
      return refused(
        "LIMIT_EXCEEDED",
        `the output of ${run.what} was larger than ${budget} bytes (the profile's output_bytes, or ${LISTING_BYTES_PER_FILE} bytes per file of its file_count)`,
      );
    }
    return ok({ output: outcome.output, durationMs: outcome.durationMs });
  }
  return failed(profile, outcome, run);
}

function failed(
  profile: Profile,
  outcome: ProcessOutcome,
  run: Omit<RsyncRun, "args" | "needsWholeOutput">,
): RemoteResult {
  const failure = classifyFailure(outcome.output, {
    profile,
    exitCode: outcome.exitCode,
    timedOut: outcome.timedOut,
    write: run.write,
    missingCode: run.missingCode,
    what: run.what,
  });
  return fail({ ...failure, detail: toDetail(outcome.output) });
}

/**
 * Ask the receiver for what its rrsync confinement must refuse, on a
 * listing where a plain rsync would do no harm with it. A receiver that
 * accepts is not the one the profile describes, and is not used.
 */
async function attestConfinement(t: Transport, profile: Profile): Promise<RemoteResult | null> {
  const target = spec(profile, ".");
  for (const check of CONFINEMENT_CHECKS) {
    const outcome = await connect(
      t,
      profile,
      ["--list-only", "--no-h", `-M${check.option}`, "--", target],
      profile.limits.outputBytes,
    );
    if ("ok" in outcome) return outcome;
    if (check.refusal.test(outcome.output)) continue;
    if (outcome.exitCode === 0 && !outcome.timedOut) {
      return refused(
        "RECEIVER_REFUSED",
        `${endpoint(profile)} accepted ${check.option}, which rrsync ${check.flag} refuses: the key is not confined by rrsync as the profile says, so the broker does not use this receiver`,
      );
    }
    return failed(profile, outcome, {
      what: `checking the receiver's confinement`,
      write: false,
      missingCode: "RECEIVER_REFUSED",
    });
  }
  return null;
}

function spec(profile: Profile, path: string): string {
  const value = remoteSpec(profile, path);
  if (value === null) {
    throw new RelayError("ValueError", `remote path ${JSON.stringify(path)} is not a plain relative path`);
  }
  return value;
}

async function preflight(t: Transport, profile: Profile): Promise<RemoteResult> {
  const pin = await checkPin(t, profile);
  if (pin !== null) return pin;
  const key = readCredential(profile.credentialId, t.sources);
  if (!key.ok) return refused("CREDENTIAL_UNAVAILABLE", key.error);
  key.value.bytes.fill(0);
  return ok({ output: "", durationMs: 0 });
}

async function probe(t: Transport, profile: Profile): Promise<RemoteResult> {
  const target = spec(profile, ".");
  const listed = await rsync(t, profile, {
    what: `listing the remote root ${profile.remoteRoot}`,
    write: false,
    missingCode: "RECEIVER_REFUSED",
    needsWholeOutput: false,
    args: ["--list-only", "--no-h", "--", target],
  });
  if (!listed.ok) return listed;
  return (await attestConfinement(t, profile)) ?? listed;
}

function push(
  t: Transport,
  profile: Profile,
  localDir: string,
  remotePath: string,
  dryRun: boolean,
): Promise<RemoteResult> {
  const target = spec(profile, remotePath);
  assertLocalDirectory(localDir, false);
  return rsync(t, profile, {
    what: `${dryRun ? "a dry run of the copy" : "the copy"} to ${remotePath}`,
    write: !dryRun,
    missingCode: "RECEIVER_REFUSED",
    needsWholeOutput: dryRun,
    args: [
      "-r",
      "-t",
      "--mkpath",
      "--ignore-existing",
      "--itemize-changes",
      ...(dryRun ? ["--dry-run"] : []),
      "--",
      `${localDir}/`,
      target,
    ],
  });
}

function pull(
  t: Transport,
  profile: Profile,
  remotePath: string,
  localDir: string,
  maxBytes: number,
): Promise<RemoteResult> {
  const target = spec(profile, remotePath);
  assertLocalDirectory(localDir, true);
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw new RelayError("ValueError", `maxBytes must be a positive integer, got ${maxBytes}`);
  }
  return rsync(t, profile, {
    what: `fetching ${remotePath}`,
    write: false,
    missingCode: "RUN_NOT_FOUND",
    needsWholeOutput: false,
    args: ["-r", "-t", `--max-size=${maxBytes}`, "--", target, `${localDir}/`],
  });
}

function refused(code: OutcomeCode, message: string, output = ""): RemoteResult {
  return fail({ code, message, interrupted: false, detail: toDetail(output) });
}

function cannotStart(program: string, err: unknown): RemoteResult {
  if (!(err instanceof RelayError)) throw err;
  return refused("MISSING_EXECUTION_CAPABILITY", `the broker cannot run ${program}: ${err.message}`);
}

/** The owner of the profile's directory, who may also own its pin file. */
function profileDirOwner(profile: Profile): number[] {
  try {
    return [statSync(dirname(profile.file)).uid];
  } catch {
    // The profile's directory is gone: only root may own the pin then.
    return [];
  }
}

/** A local directory handed in by the operations: absolute, a real directory, and empty when it receives. */
function assertLocalDirectory(dir: string, mustBeEmpty: boolean): void {
  if (!isAbsolute(dir) || dir.endsWith("/")) {
    throw new RelayError(
      "ValueError",
      `local directory ${JSON.stringify(dir)} must be absolute, without a trailing '/'`,
    );
  }
  const st = statSync(dir);
  if (!st.isDirectory()) throw new RelayError("ValueError", `${dir} is not a directory`);
  if (mustBeEmpty && readdirSync(dir).length > 0) {
    throw new RelayError("ValueError", `${dir} must be empty before a remote directory is fetched into it`);
  }
}

const KEY_BLOCK = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g;
const LONG_BASE64_LINE = /^[A-Za-z0-9+/=]{40,}$/gm;

/**
 * A bounded excerpt of what ssh/rsync printed. ssh never prints a private
 * key, but whatever shape of key material might appear is cut out anyway:
 * the detail reaches receipts and callers.
 */
export function toDetail(output: string): string {
  const scrubbed = output.replace(KEY_BLOCK, "[key material removed]").replace(LONG_BASE64_LINE, "[removed]");
  const tail = scrubbed.length > DETAIL_BYTES ? scrubbed.slice(-DETAIL_BYTES) : scrubbed;
  return truncateUtf8(tail.trim(), DETAIL_BYTES).text;
}
