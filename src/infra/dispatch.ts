import { redactString } from "../audit/index.js";
import { describeError, type Logger } from "../core/index.js";
import type { InfraRequest, OutcomeCode } from "../infra-protocol/index.js";
import type { ApprovalGate, VerifiedApproval } from "./approvals.js";
import type { Operations, OpResult, Principal, Profile, ProfileSet } from "./types.js";

export interface DispatchDeps {
  profiles: ProfileSet;
  operations: Operations;
  /** The check of a human-signed approval, for a profile whose approval policy is consent. */
  approvals: ApprovalGate;
  /** Whether the receipt of an operation can be written now; an operation runs only when it can. */
  reserveReceipt(): boolean;
  /** What `status` says about the daemon itself. */
  facts(): Record<string, unknown>;
  logger: Logger;
}

export interface Dispatcher {
  /** The answer to one validated request from `principal`. Never throws. */
  dispatch(principal: Principal, request: InfraRequest): Promise<OpResult>;
}

const NEEDS_RUN_ID = new Set(["rsync-dry-run", "replicate", "verify"]);

function refuse(code: OutcomeCode, message: string, data?: Record<string, unknown>): OpResult {
  return data === undefined ? { code, message } : { code, message, data };
}

/** The principal may use the profile: its uid is listed, or its primary or a supplementary group is. */
export function isAllowed(principal: Principal, profile: Profile): boolean {
  const { uids, gids } = profile.allowedPrincipals;
  if (uids.includes(principal.uid)) return true;
  return [principal.gid, ...principal.groups].some((gid) => gids.includes(gid));
}

/** Some loaded profile lists the principal; everyone else is a stranger to this broker. */
export function isKnownPrincipal(principal: Principal, profiles: ProfileSet): boolean {
  for (const profile of profiles.profiles.values()) if (isAllowed(principal, profile)) return true;
  return false;
}

/** What `status` shows of a usable profile: where it goes and how it is gated, never a key. */
function describeProfile(profile: Profile): Record<string, unknown> {
  return {
    id: profile.id,
    enabled: profile.enabled,
    host: profile.host,
    port: profile.port,
    user: profile.user,
    remote_root: profile.remoteRoot,
    approval: profile.approval,
    receiver: profile.receiver,
    require_dry_run: profile.requireDryRun,
  };
}

/**
 * The one place the broker decides what a request may do. Checks run in a
 * fixed order, each with its own outcome code, and only a request that
 * passes all of them reaches an operation: the profile exists and is sound,
 * the principal is one it lists, it is enabled, its approval policy is met,
 * the fields the operation needs are there, and its receipt can be written.
 * Operations on one profile run one at a time, in arrival order.
 */
export function createDispatcher(deps: DispatchDeps): Dispatcher {
  // The tail of each profile's queue: the next operation on it starts when this settles.
  const queues = new Map<string, Promise<unknown>>();
  return {
    async dispatch(principal, request) {
      if (request.op === "status") return status(deps, principal);
      const admitted = admit(deps, principal, request);
      if ("code" in admitted) return admitted;
      return enqueue(deps, queues, admitted, request);
    },
  };
}

/** A request that passed every check before the queue, with the approval it will consume. */
interface Admitted {
  profile: Profile;
  approval: VerifiedApproval | null;
}

function status(deps: DispatchDeps, principal: Principal): OpResult {
  const { profiles } = deps;
  const seen = { uid: principal.uid, gid: principal.gid, groups: principal.groups };
  // A stranger learns that no profile is for it, and nothing of the broker, its files or their modes.
  if (!isKnownPrincipal(principal, profiles)) {
    return {
      code: "OK",
      message: `no profile is usable by uid ${principal.uid}`,
      data: { principal: seen, profiles: [] },
    };
  }
  const usable = [...profiles.profiles.values()]
    .filter((p) => isAllowed(principal, p))
    .sort((a, b) => a.id.localeCompare(b.id))
    .map(describeProfile);
  const broken = [...profiles.broken.values()]
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((b) => ({ id: b.id, problems: [...b.problems] }));
  return {
    code: "OK",
    message: `${usable.length} profile(s) usable by uid ${principal.uid}, ${broken.length} broken`,
    data: {
      broker: deps.facts(),
      principal: seen,
      profiles: usable,
      broken,
    },
  };
}

function admit(deps: DispatchDeps, principal: Principal, request: InfraRequest): Admitted | OpResult {
  const { profiles } = deps;
  const id = request.profile;
  if (id === undefined) return refuse("PROFILE_REQUIRED", `${request.op} needs a profile id`);
  const broken = profiles.broken.get(id);
  if (broken !== undefined && !isKnownPrincipal(principal, profiles)) {
    // Whom a broken profile was for is unknown; its problems name paths and modes, not a stranger's to read.
    return refuse(
      "PRINCIPAL_NOT_ALLOWED",
      `uid ${principal.uid} (gid ${principal.gid}) is not allowed to use profile ${id}`,
    );
  }
  if (broken !== undefined) {
    return refuse("PROFILE_INVALID", `profile ${id} cannot be used: ${broken.problems.join("; ")}`, {
      problems: [...broken.problems],
    });
  }
  const profile = profiles.profiles.get(id);
  if (profile === undefined) return refuse("PROFILE_NOT_FOUND", `there is no profile ${id}`);
  if (!isAllowed(principal, profile)) {
    return refuse(
      "PRINCIPAL_NOT_ALLOWED",
      `uid ${principal.uid} (gid ${principal.gid}) is not allowed to use profile ${id}`,
    );
  }
  if (!profile.enabled) return refuse("PROFILE_DISABLED", `profile ${id} is disabled`);
  const approved = deps.approvals.check(profile, request);
  if (!approved.ok) return approved.error;
  if (NEEDS_RUN_ID.has(request.op) && request.run_id === undefined) {
    return refuse("RUN_ID_REQUIRED", `${request.op} needs a run id`);
  }
  if (request.op === "replicate" && request.idempotency_key === undefined) {
    return refuse("IDEMPOTENCY_KEY_REQUIRED", "replicate needs an idempotency key");
  }
  return { profile, approval: approved.value };
}

function perform(operations: Operations, profile: Profile, request: InfraRequest): Promise<OpResult> {
  const runId = request.run_id ?? "";
  switch (request.op) {
    case "probe":
      return operations.probe(profile);
    case "rsync-dry-run":
      return operations.dryRun(profile, runId);
    case "replicate":
      return operations.replicate(profile, runId, request.idempotency_key ?? "");
    case "verify":
      return operations.verify(profile, runId);
    case "status":
      return Promise.resolve(refuse("INTERNAL_ERROR", "status is not an operation on a profile"));
  }
}

async function guarded(
  deps: DispatchDeps,
  { profile, approval }: Admitted,
  request: InfraRequest,
): Promise<OpResult> {
  const record = approval === null ? {} : { approval: approval.record };
  // Asked inside the queue, right before the work: the room must be there when it runs.
  if (!deps.reserveReceipt()) {
    return {
      ...refuse(
        "RECEIPT_UNAVAILABLE",
        `${request.op} was not performed: the broker cannot write its receipt`,
      ),
      ...record,
    };
  }
  // Last before the work, after every check of its own: a request refused before its turn spends nothing.
  if (approval !== null) {
    const spent = deps.approvals.consume(request.op, approval);
    if (spent !== null) return spent;
  }
  try {
    return { ...(await perform(deps.operations, profile, request)), ...record };
  } catch (err) {
    // Redacted even here: an exception's text is not ours to trust, and a key must not reach a log.
    deps.logger.error(
      { op: request.op, profile: profile.id, err: redactString(describeError(err).message) },
      "operation failed",
    );
    return {
      ...refuse("INTERNAL_ERROR", `${request.op} failed inside the broker; the broker's log has the detail`),
      ...record,
    };
  }
}

function enqueue(
  deps: DispatchDeps,
  queues: Map<string, Promise<unknown>>,
  admitted: Admitted,
  request: InfraRequest,
): Promise<OpResult> {
  const { profile } = admitted;
  const before = queues.get(profile.id) ?? Promise.resolve();
  const result = before.then(() => guarded(deps, admitted, request));
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  queues.set(profile.id, settled);
  settled.then(() => {
    if (queues.get(profile.id) === settled) queues.delete(profile.id);
  });
  return result;
}
