import { join } from "node:path";
import { createProcessRunner } from "../../src/exec/index.js";
import type { Profile, Remote, RemoteResult } from "../../src/infra/types.js";
import type { OutcomeCode } from "../../src/infra-protocol/index.js";

/**
 * A minimal rsync transport for the operations' tests: every call runs the
 * real rsync (through the project's process runner, with the profile's time
 * and output bounds), either against `<receiver>/<remote root>/` on the local
 * disk, or over ssh to a receiver whose key is forced to rrsync (`ssh`). It
 * passes the options the broker's transport passes (--ignore-existing,
 * --mkpath, never --delete), so what a run directory ends up holding is what
 * rsync really did. `failures` lets a test make the next call of an
 * operation fail before anything is sent.
 */
export interface RsyncRemote extends Remote {
  calls: Array<{ op: string; path: string; dryRun?: boolean }>;
  failures: Map<string, { code: OutcomeCode; interrupted: boolean }>;
  /** Extra rsync options for pushes (e.g. --bwlimit to make a push slow enough to kill). */
  pushOptions: string[];
  /** A shorter bound for real (not dry-run) pushes only, so a test can cut one off mid-transfer. */
  pushTimeoutMs: number | null;
}

export interface SshReceiver {
  /** The full `ssh ...` command rsync runs (-e), with the key and pinned known_hosts. */
  command: string;
  user: string;
  host: string;
}

export function createRsyncRemote(receiver: string, ssh?: SshReceiver): RsyncRemote {
  const runner = createProcessRunner();
  const calls: RsyncRemote["calls"] = [];
  const failures: RsyncRemote["failures"] = new Map();
  const pushOptions: string[] = [];
  const base = (profile: Profile) =>
    ssh === undefined ? join(receiver, profile.remoteRoot) : `${ssh.user}@${ssh.host}:${profile.remoteRoot}`;

  async function rsync(profile: Profile, args: string[], timeoutMs?: number): Promise<RemoteResult> {
    const outcome = await runner.run({
      argv: ["rsync", ...(ssh === undefined ? [] : ["-e", ssh.command]), ...args],
      env: { PATH: "/usr/bin:/bin", LANG: "C" },
      timeoutMs: timeoutMs ?? profile.limits.timeoutSeconds * 1000,
      maxBufferBytes: profile.limits.outputBytes,
      mergeStderr: false,
      killGraceMs: 200,
    });
    if (outcome.exitCode === 0 && !outcome.timedOut) {
      return { ok: true, value: { output: outcome.output, durationMs: outcome.durationMs } };
    }
    return {
      ok: false,
      error: {
        code: "TRANSFER_FAILED",
        message: outcome.timedOut
          ? "rsync ran out of time and was stopped."
          : `rsync exited with ${outcome.exitCode}.`,
        interrupted: outcome.timedOut || (outcome.exitCode ?? 0) < 0,
        detail: outcome.output.slice(-2000),
      },
    };
  }

  function injected(op: string): RemoteResult | null {
    const failure = failures.get(op);
    if (failure === undefined) return null;
    failures.delete(op);
    return {
      ok: false,
      error: {
        code: failure.code,
        message: `injected ${failure.code}.`,
        interrupted: failure.interrupted,
        detail: "",
      },
    };
  }

  const self: RsyncRemote = {
    calls,
    failures,
    pushOptions,
    pushTimeoutMs: null,
    async preflight() {
      calls.push({ op: "preflight", path: "" });
      return injected("preflight") ?? { ok: true, value: { output: "", durationMs: 0 } };
    },
    async probe(profile) {
      calls.push({ op: "probe", path: "" });
      return injected("probe") ?? rsync(profile, ["--list-only", `${base(profile)}/`]);
    },
    async list(profile, remotePath) {
      calls.push({ op: "list", path: remotePath });
      return injected("list") ?? rsync(profile, ["--list-only", "-r", `${base(profile)}/${remotePath}/`]);
    },
    async push(profile, localDir, remotePath, options) {
      calls.push({ op: "push", path: remotePath, dryRun: options.dryRun });
      const failure = injected(options.dryRun ? "dry-push" : "push");
      if (failure !== null) return failure;
      const args = ["-r", "-t", "--ignore-existing", "--mkpath", "--itemize-changes", ...pushOptions];
      if (options.dryRun) args.push("--dry-run");
      const bound = options.dryRun ? undefined : (self.pushTimeoutMs ?? undefined);
      return rsync(profile, [...args, `${localDir}/`, `${base(profile)}/${remotePath}/`], bound);
    },
    async pull(profile, remotePath, localDir, maxBytes) {
      calls.push({ op: "pull", path: remotePath });
      return (
        injected("pull") ??
        rsync(profile, [
          "-r",
          "-t",
          `--max-size=${maxBytes}`,
          `${base(profile)}/${remotePath}/`,
          `${localDir}/`,
        ])
      );
    },
  };
  return self;
}
