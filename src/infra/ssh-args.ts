import { isIPv6 } from "node:net";
import { DEFAULT_PATH } from "../exec/index.js";
import type { OutcomeCode } from "../infra-protocol/index.js";
import { ARGV_UNSAFE, remoteRootProblems } from "./profile-schema.js";
import type { Profile } from "./types.js";

/**
 * The fixed argument vectors of the transport (docs/infra-broker.md
 * §Transport). Nothing here comes from a request: the host, port, user,
 * pin and remote root are the operator's profile, the key file and HOME
 * are the broker's own temporary directory, and the paths are checked
 * names under the remote root.
 */

const SSH_PROGRAM = "ssh";
export const RSYNC_PROGRAM = "rsync";
export const SSH_KEYGEN_PROGRAM = "ssh-keygen";

/** The longest ssh connect phase, whatever the profile's overall timeout. */
const MAX_CONNECT_TIMEOUT_SECONDS = 30;

/** `user@host:port` for messages. */
export function endpoint(profile: Profile): string {
  const host = isIPv6(profile.host) ? `[${profile.host}]` : profile.host;
  return `${profile.user}@${host}:${profile.port}`;
}

/** The name ssh looks the host up under in known_hosts: `host`, or `[host]:port` off port 22. */
export function knownHostsName(profile: Profile): string {
  return profile.port === 22 ? profile.host : `[${profile.host}]:${profile.port}`;
}

/**
 * ssh's argv up to (not including) the host: no config file, no agent, no
 * password or keyboard prompt, only the one key, the pin as the only known
 * hosts, no forwarding of any kind, no host key learned or updated.
 */
export function sshOptions(profile: Profile, keyFile: string): string[] {
  const connectTimeout = Math.min(profile.limits.timeoutSeconds, MAX_CONNECT_TIMEOUT_SECONDS);
  return [
    "-F",
    "/dev/null",
    "-o",
    "BatchMode=yes",
    "-o",
    "PasswordAuthentication=no",
    "-o",
    "KbdInteractiveAuthentication=no",
    "-o",
    "PubkeyAuthentication=yes",
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "IdentityAgent=none",
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    `UserKnownHostsFile=${profile.knownHostsFile}`,
    "-o",
    "GlobalKnownHostsFile=/dev/null",
    "-o",
    "UpdateHostKeys=no",
    "-o",
    `ConnectTimeout=${connectTimeout}`,
    "-o",
    "ClearAllForwardings=yes",
    "-i",
    keyFile,
    "-p",
    String(profile.port),
    "-l",
    profile.user,
  ];
}

/**
 * The `-e` value rsync runs as its remote shell. rsync splits it on
 * whitespace and honours quotes, so every word is refused unless it holds
 * none of them: one word can never become two.
 */
export function rsyncShell(profile: Profile, keyFile: string): string {
  const words = [SSH_PROGRAM, ...sshOptions(profile, keyFile)];
  const unsafe = words.find((word) => word === "" || ARGV_UNSAFE.test(word));
  if (unsafe !== undefined) {
    throw new Error(`ssh argument ${JSON.stringify(unsafe)} would be split by rsync's -e`);
  }
  return words.join(" ");
}

/**
 * The receiver-side path of `path` (relative to the profile's remote root),
 * with a trailing slash so rsync treats it as a directory: `host:root/path/`.
 * Returns null when `path` is not a plain relative path.
 */
export function remoteSpec(profile: Profile, path: string): string | null {
  const relative = path === "" || path === "." ? "." : path;
  if (remoteRootProblems(relative).length > 0) return null;
  let joined: string;
  if (profile.remoteRoot === ".") joined = relative;
  else if (relative === ".") joined = profile.remoteRoot;
  else joined = `${profile.remoteRoot}/${relative}`;
  const host = isIPv6(profile.host) ? `[${profile.host}]` : profile.host;
  return `${host}:${joined === "." ? "./" : `${joined}/`}`;
}

/**
 * The whole environment of every ssh, rsync and ssh-keygen child. Built
 * from nothing rather than filtered from the daemon's own: no agent socket,
 * no SSH_* settings, no locale or proxy variables can leak into a run.
 */
export function childEnvironment(home: string): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: home, LANG: "C" };
}

/**
 * What a receiver confined by `rrsync -no-del -no-overwrite` refuses, each
 * asked for as a remote option (`-M`) of a listing, where a plain rsync
 * server would write its log to /dev/null or have nothing to delete.
 */
export const CONFINEMENT_CHECKS = [
  {
    option: "--log-file=/dev/null",
    flag: "-no-overwrite",
    refusal: /rrsync error: option --log-file has been disabled/,
  },
  {
    option: "--delete-excluded",
    flag: "-no-del",
    refusal: /rrsync error: option --delete-excluded has been disabled/,
  },
] as const;

/** How one failed ssh/rsync run is reported. */
export interface Failure {
  code: OutcomeCode;
  message: string;
  interrupted: boolean;
}

export interface FailureContext {
  profile: Profile;
  exitCode: number | null;
  timedOut: boolean;
  /** The run could have written to the receiver (a push without --dry-run). */
  write: boolean;
  /** The code for "the path does not exist on the receiver" (a run not found, a missing remote root). */
  missingCode: OutcomeCode;
  /** What was attempted, for the message ("listing runs/r1"). */
  what: string;
}

/*
 * ssh's and rrsync's messages, each matched against a whole line of its own
 * (see messageLines): a file name rsync prints in an itemized or listed line
 * can hold any of these words, and must never be read as ssh speaking.
 */
const PIN_UNKNOWN = /^No \S+ host key is known for /;
const PIN_MISMATCH = /^@+ +WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED|^Host key verification failed\./;
/** Failures to open the connection at all: nothing can have been written. */
const UNREACHABLE =
  /^ssh: connect to host \S+ port \d+: |^ssh: Could not resolve hostname |^Connection timed out during banner exchange|^kex_exchange_identification: /;
/** A connection lost at any stage, the middle of a transfer included. */
const LOST = /^Connection (closed|reset) by \S+ port \d+|^client_loop: .*Broken pipe|^rsync: .*Broken pipe/;
const KEY_UNUSABLE = /^Load key "[^"]*": /;
const KEY_REFUSED = /^(\S+@\S+: )?Permission denied \([a-z,-]+\)\.?$/;
const RECEIVER = /^(?:\S*\/)?rrsync error: (.*)/;
const MISSING = /No such file or directory/;

/**
 * A line of rsync's `--itemize-changes` output (`<f+++++++++ name`,
 * `cd+++++++++ dir/`, `.d..t...... ./`): eleven characters of rsync's own,
 * a space, then a name. rsync escapes a newline in a name (`\#012`), so a
 * name never starts a line of its own.
 */
const ITEMIZED = /^[<>ch.*][fdLDS][^ ]{9} /;
/** `created directory X`, or `created N directories for X` (--mkpath): rsync made the path. */
const CREATED = /^created (directory |\d+ directories for )/;

function outputLines(output: string): string[] {
  return output.split(/\r?\n/).map((line) => line.replace(/\r$/, ""));
}

/**
 * Whether rsync itself reported a change on the receiver before it stopped:
 * an itemized line or a directory it created. Read from the shape of rsync's
 * own lines, never from words a file name could hold.
 */
function rsyncReportedWrite(output: string): boolean {
  return outputLines(output).some((line) => ITEMIZED.test(line) || CREATED.test(line));
}

/** The lines ssh, rsync or rrsync wrote as messages: everything but itemized and listed entries. */
function messageLines(output: string): string[] {
  return outputLines(output).filter((line) => !ITEMIZED.test(line) && !LISTED.test(line));
}

/** A `--list-only` entry: mode string, size, date, time, name. */
const LISTED = /^[-dlcbps][-rwxsStT]{9}[+.@]? +[0-9][0-9,.]* \d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2} /;

function findLine(lines: readonly string[], pattern: RegExp): string | null {
  return lines.find((line) => pattern.test(line)) ?? null;
}

/**
 * Map what ssh/rsync printed to an outcome code. A write that rsync says
 * changed anything on the receiver (an itemized line, a created directory) is
 * decided first: it is `interrupted` whatever else the output holds, since
 * the names it carries can spell any message. Otherwise the failures that can
 * only happen before rsync starts (no route, pin, key, rrsync's refusal) are
 * never `interrupted`, read from ssh's and rrsync's own message lines; any
 * other failure of a write, a lost connection, a timeout or a signal during
 * one included, may have left part of it on the receiver.
 */
export function classifyFailure(output: string, ctx: FailureContext): Failure {
  const where = `${endpoint(ctx.profile)} (${ctx.what})`;
  const pin = ctx.profile.knownHostsFile;
  if (ctx.write && rsyncReportedWrite(output)) return interruptedWrite(ctx, where);
  const lines = messageLines(output);
  if (findLine(lines, PIN_UNKNOWN) !== null) {
    return failure("PIN_MISSING", `the pin file ${pin} has no key for ${where}; nothing was sent`);
  }
  if (findLine(lines, PIN_MISMATCH) !== null) {
    return failure(
      "PIN_CHANGED",
      `the host key of ${where} does not match the pin in ${pin}; the connection was refused and the pin is never updated automatically`,
    );
  }
  const unreachable = findLine(lines, UNREACHABLE);
  if (unreachable !== null) {
    return failure("NETWORK_FAILURE", `could not reach ${where}: ${unreachable.trim().slice(0, 300)}`);
  }
  if (findLine(lines, KEY_UNUSABLE) !== null) {
    return failure(
      "CREDENTIAL_UNAVAILABLE",
      `ssh could not use the key of credential ${ctx.profile.credentialId}`,
    );
  }
  if (findLine(lines, KEY_REFUSED) !== null) {
    return failure(
      "CREDENTIAL_REJECTED",
      `${where} refused the key of credential ${ctx.profile.credentialId} (Permission denied)`,
    );
  }
  const receiverLine = findLine(lines, RECEIVER);
  if (receiverLine !== null) {
    const reason = (RECEIVER.exec(receiverLine)?.[1] ?? "").trim().slice(0, 300);
    if (MISSING.test(reason)) {
      return failure(ctx.missingCode, `${where}: the path does not exist on the receiver`);
    }
    return failure("RECEIVER_REFUSED", `the receiver's rrsync refused ${ctx.what}: ${reason}`);
  }
  if (ctx.write) return interruptedWrite(ctx, where);
  const seconds = ctx.profile.limits.timeoutSeconds;
  if (ctx.timedOut) {
    return failure("NETWORK_FAILURE", `${where} did not answer within the profile's ${seconds} s limit`);
  }
  const lost = findLine(lines, LOST);
  if (lost !== null) {
    return failure("NETWORK_FAILURE", `the connection to ${where} was lost: ${lost.trim().slice(0, 300)}`);
  }
  return failure(
    "TRANSFER_FAILED",
    `${ctx.what} with ${where} failed (exit ${ctx.exitCode ?? "none"}): ${lastLine(lines)}`,
  );
}

function interruptedWrite(ctx: FailureContext, where: string): Failure {
  const why = ctx.timedOut
    ? `was stopped after the profile's ${ctx.profile.limits.timeoutSeconds} s limit`
    : ctx.exitCode !== null && ctx.exitCode < 0
      ? `was killed by signal ${-ctx.exitCode}`
      : `failed (exit ${ctx.exitCode ?? "none"})`;
  return {
    code: "WRITE_INTERRUPTED",
    message: `${ctx.what} to ${where} ${why} after it may have written; the run's state on the receiver is unknown`,
    interrupted: true,
  };
}

function failure(code: OutcomeCode, message: string): Failure {
  return { code, message, interrupted: false };
}

function lastLine(lines: readonly string[]): string {
  const kept = lines.filter((l) => l.trim() !== "");
  return (kept[kept.length - 1] ?? "no output").trim().slice(0, 300);
}
