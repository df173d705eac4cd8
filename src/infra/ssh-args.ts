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

const PIN_UNKNOWN = /No \S+ host key is known for/;
const PIN_MISMATCH = /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/;
/** Failures to open the connection at all: nothing can have been written. */
const UNREACHABLE =
  /ssh: connect to host \S+ port \d+: |ssh: Could not resolve hostname|Connection timed out during banner exchange|kex_exchange_identification|Name or service not known|Temporary failure in name resolution/;
/** A connection lost at any stage, the middle of a transfer included. */
const LOST = /Connection closed by \S+ port \d+|Connection reset by \S+ port \d+|Broken pipe/;
const KEY_UNUSABLE = /Load key "[^"]*": /;
const KEY_REFUSED = /Permission denied \([a-z,-]+\)/;
const RECEIVER = /rrsync error: (.*)/;
const MISSING = /No such file or directory/;

/**
 * Map what ssh/rsync printed to an outcome code. The failures that can
 * only happen before rsync starts (no route, pin, key, rrsync's refusal)
 * are never `interrupted`; any other failure of a write, a lost connection,
 * a timeout or a signal during one included, may have left part of it on
 * the receiver.
 */
export function classifyFailure(output: string, ctx: FailureContext): Failure {
  const where = `${endpoint(ctx.profile)} (${ctx.what})`;
  const pin = ctx.profile.knownHostsFile;
  if (PIN_UNKNOWN.test(output)) {
    return failure("PIN_MISSING", `the pin file ${pin} has no key for ${where}; nothing was sent`);
  }
  if (PIN_MISMATCH.test(output)) {
    return failure(
      "PIN_CHANGED",
      `the host key of ${where} does not match the pin in ${pin}; the connection was refused and the pin is never updated automatically`,
    );
  }
  if (UNREACHABLE.test(output)) {
    return failure("NETWORK_FAILURE", `could not reach ${where}: ${firstMatchLine(output, UNREACHABLE)}`);
  }
  if (KEY_UNUSABLE.test(output)) {
    return failure(
      "CREDENTIAL_UNAVAILABLE",
      `ssh could not use the key of credential ${ctx.profile.credentialId}`,
    );
  }
  if (KEY_REFUSED.test(output)) {
    return failure(
      "CREDENTIAL_REJECTED",
      `${where} refused the key of credential ${ctx.profile.credentialId} (Permission denied)`,
    );
  }
  const receiver = RECEIVER.exec(output);
  if (receiver !== null) {
    const reason = (receiver[1] ?? "").trim().slice(0, 300);
    if (MISSING.test(reason)) {
      return failure(ctx.missingCode, `${where}: the path does not exist on the receiver`);
    }
    return failure("RECEIVER_REFUSED", `the receiver's rrsync refused ${ctx.what}: ${reason}`);
  }
  const seconds = ctx.profile.limits.timeoutSeconds;
  if (ctx.write) {
    const why = ctx.timedOut
      ? `was stopped after the profile's ${seconds} s limit`
      : ctx.exitCode !== null && ctx.exitCode < 0
        ? `was killed by signal ${-ctx.exitCode}`
        : `failed (exit ${ctx.exitCode ?? "none"})`;
    return {
      code: "WRITE_INTERRUPTED",
      message: `${ctx.what} to ${where} ${why} after it may have written; the run's state on the receiver is unknown`,
      interrupted: true,
    };
  }
  if (ctx.timedOut) {
    return failure("NETWORK_FAILURE", `${where} did not answer within the profile's ${seconds} s limit`);
  }
  if (LOST.test(output)) {
    return failure("NETWORK_FAILURE", `the connection to ${where} was lost: ${firstMatchLine(output, LOST)}`);
  }
  return failure(
    "TRANSFER_FAILED",
    `${ctx.what} with ${where} failed (exit ${ctx.exitCode ?? "none"}): ${lastLine(output)}`,
  );
}

function failure(code: OutcomeCode, message: string): Failure {
  return { code, message, interrupted: false };
}

function firstMatchLine(output: string, pattern: RegExp): string {
  const line = output.split(/\r?\n/).find((l) => pattern.test(l)) ?? "";
  return line.trim().slice(0, 300);
}

function lastLine(output: string): string {
  const lines = output.split(/\r?\n/).filter((l) => l.trim() !== "");
  return (lines[lines.length - 1] ?? "no output").trim().slice(0, 300);
}
