import type { Clock, Ids, Logger, Result } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";
import type { OutcomeCode } from "../infra-protocol/index.js";

/** Who is on the other end of a connection, as the kernel says (SO_PEERCRED). */
export interface Principal {
  uid: number;
  gid: number;
  pid: number;
  /** Supplementary groups of the peer process at connect time (from /proc), when readable. */
  groups: number[];
}

interface ProfileLimits {
  /** Wall-clock bound of one ssh/rsync process. */
  timeoutSeconds: number;
  /** Bytes of ssh/rsync output kept. */
  outputBytes: number;
  /** Bytes one snapshot (and so one replication) may hold. */
  transferBytes: number;
  /** Files one snapshot may hold. */
  fileCount: number;
}

/** One operator-owned profile, validated (docs/infra-broker.md §Profiles). */
export interface Profile {
  id: string;
  /** The file it was read from. */
  file: string;
  enabled: boolean;
  host: string;
  port: number;
  user: string;
  /** Absolute local directories; each is snapshotted under its base name. */
  sourceRoots: string[];
  /** Path on the receiver, relative to the directory rrsync confines it to ("." for that directory). */
  remoteRoot: string;
  /** Absolute path of the pinned known_hosts file. */
  knownHostsFile: string;
  credentialId: string;
  limits: ProfileLimits;
  allowedPrincipals: { uids: number[]; gids: number[] };
  approval: "none" | "consent";
  /** How the receiver is confined: rrsync as the forced command of the key. */
  receiver: "rrsync";
  requireDryRun: boolean;
}

/** A profile file that could not be used, reported at start-up and by `status`. */
export interface BrokenProfile {
  id: string;
  file: string;
  problems: string[];
}

export interface ProfileSet {
  profiles: ReadonlyMap<string, Profile>;
  broken: ReadonlyMap<string, BrokenProfile>;
}

/** What a receipt records of an approval: which request and who signed, never the signature. */
export interface ApprovalRecord {
  request: string;
  /** The principal the relay named; a claim, kept for the record only. */
  claimed_signer: string;
  /** The principal the broker's own allowed signers give the key, once the signature verified. */
  principal: string | null;
  /** SHA256 fingerprint of the signing key, once the signature verified. */
  fingerprint: string | null;
}

/** What one operation answers; the server adds the receipt id and request echo. */
export interface OpResult {
  code: OutcomeCode;
  message: string;
  data?: Record<string, unknown>;
  replayed?: boolean;
  /** The approval this request carried, for its receipt only (never sent back). */
  approval?: ApprovalRecord;
}

/** Why one ssh/rsync run against a profile's receiver failed. */
export interface RemoteFailure {
  /** The blocked code the failure maps to (PIN_CHANGED, NETWORK_FAILURE, CREDENTIAL_REJECTED, ...). */
  code: OutcomeCode;
  message: string;
  /**
   * The process was killed (timeout, signal) or lost its connection after
   * it may have written: a write it carried is of unknown state.
   */
  interrupted: boolean;
  /** A bounded, key-free excerpt of what ssh/rsync printed, for the receipt. */
  detail: string;
}

/** The result of one ssh/rsync run against a profile's receiver: what it printed, and how long it took. */
export type RemoteResult = Result<{ output: string; durationMs: number }, RemoteFailure>;

/**
 * The only way the broker reaches a receiver: fixed ssh/rsync argument
 * vectors built from the profile, the key handed over through a private
 * temporary file, every process through exec/ (docs/infra-broker.md §Transport).
 * Paths are relative to the profile's remote root and are checked again here.
 */
export interface Remote {
  /** The pin is present and the credential readable: the local preconditions of any connection. */
  preflight(profile: Profile): Promise<RemoteResult>;
  /** Connect and list the remote root (`rsync --list-only`), proving pin, key and receiver. */
  probe(profile: Profile): Promise<RemoteResult>;
  /** `rsync --list-only -r` of one path under the remote root; output parsed by the caller. */
  list(profile: Profile, remotePath: string): Promise<RemoteResult>;
  /**
   * Copy the contents of `localDir` into `remotePath/` (created with --mkpath),
   * never deleting, never overwriting (--ignore-existing), with itemized
   * changes in the output. `dryRun` adds `--dry-run`.
   */
  push(
    profile: Profile,
    localDir: string,
    remotePath: string,
    options: { dryRun: boolean },
  ): Promise<RemoteResult>;
  /** Copy `remotePath/` into the empty local directory `localDir`, at most `maxBytes` per file. */
  pull(profile: Profile, remotePath: string, localDir: string, maxBytes: number): Promise<RemoteResult>;
}

/** What every operation may use. */
export interface InfraContext {
  remote: Remote;
  /** The daemon's private state directory (snapshots, the run ledger). */
  stateDir: string;
  runner: ProcessRunner;
  clock: Clock;
  ids: Ids;
  logger: Logger;
}

/** The operations that touch a receiver or the snapshot store (status is answered by the server). */
export interface Operations {
  probe(profile: Profile): Promise<OpResult>;
  dryRun(profile: Profile, runId: string): Promise<OpResult>;
  replicate(profile: Profile, runId: string, idempotencyKey: string): Promise<OpResult>;
  verify(profile: Profile, runId: string): Promise<OpResult>;
}
