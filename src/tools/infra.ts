import { RelayError } from "../core/index.js";
import {
  IDEMPOTENCY_KEY,
  type InfraRequest,
  type InfraResponse,
  type Operation,
  OUTCOMES,
  type OutcomeClass,
  type OutcomeCode,
  PROFILE_ID,
  RUN_ID,
  requestInfra,
  type UnreachableReason,
} from "../infra-protocol/index.js";
import type { PolicyTarget, TierSpec } from "../policy/index.js";
import {
  annotationsFor,
  defineTool,
  type Tool,
  type ToolContext,
  type ToolOutcome,
} from "../runner/index.js";

export interface InfraToolDeps {
  /** RELAY_SHELL_INFRA_SOCKET: the broker's Unix socket. */
  socketPath: string;
  /** RELAY_SHELL_MAX_TIMEOUT: the longest the relay waits for one answer. */
  maxTimeoutSeconds: number;
  /** RELAY_SHELL_MAX_OUTPUT: the budget of one result. */
  maxOutput: number;
}

/** `status` answers from the broker's memory: a broker that takes longer is not well. */
const STATUS_TIMEOUT_SECONDS = 30;

const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };
const REVERSIBLE: TierSpec = { kind: "fixed", tier: 1 };
const STATEFUL: TierSpec = { kind: "fixed", tier: 2 };

const PROFILE = {
  type: "string",
  description: "id of an operator-owned profile (it fixes host, user, paths, key and limits)",
  pattern: PROFILE_ID,
} as const;
const RUN = {
  type: "string",
  description: "id of the run: one directory <remote root>/runs/<run_id>/ on the receiver",
  pattern: RUN_ID,
} as const;

/** The structuredContent fields every infra tool adds (docs/tools.md#infra-tools). */
const RESULT_FIELDS: Record<string, Record<string, unknown>> = {
  outcome: {
    type: "string",
    enum: [...OUTCOMES],
    description: "the broker's outcome class",
  },
  code: { type: "string", description: "the broker's stable outcome code (OK, PIN_MISSING, ...)" },
  message: { type: "string", description: "the broker's sentence about the outcome" },
  receipt_id: {
    type: ["string", "null"],
    description: "id of the receipt in the broker's hash-chained log; null when the broker was not reached",
  },
  data: { type: ["object", "null"], description: "operation-specific facts from the broker" },
  replayed: {
    type: "boolean",
    description: "the idempotency key's first outcome was returned; nothing ran again",
  },
};

interface InfraArgs {
  profile?: string | undefined;
  run_id?: string;
  idempotency_key?: string;
}

/**
 * The act of an infra call that acts on a profile: `operation`, `profile`,
 * `run_id` and `idempotency_key`, exactly these, for every such tool (the
 * broker checks them when it verifies the approval again).
 */
function infraAct(operation: "probe" | "rsync-dry-run" | "replicate" | "verify") {
  return (a: InfraArgs & { profile: string }) => ({
    operation,
    profile: a.profile,
    run_id: a.run_id ?? null,
    idempotency_key: a.idempotency_key ?? null,
  });
}

/**
 * The stable policy text of an infra call: `infra <operation>`, then
 * `profile=<id>` and `run=<id>` when the call names them. This is what the
 * deny and allow lists see after the tool name; the idempotency key is not
 * part of it (it says which attempt, not what is done).
 */
function infraPolicyText(op: Operation, args: InfraArgs): string {
  const parts = ["infra", op];
  if (args.profile !== undefined) parts.push(`profile=${args.profile}`);
  if (args.run_id !== undefined) parts.push(`run=${args.run_id}`);
  return parts.join(" ");
}

function infraTargets(args: InfraArgs): PolicyTarget[] {
  const out: PolicyTarget[] = [];
  if (args.profile !== undefined) out.push({ kind: "profile", value: args.profile });
  if (args.run_id !== undefined) out.push({ kind: "run", value: args.run_id });
  return out;
}

function infraAuditArgs(args: InfraArgs): Record<string, unknown> {
  return {
    ...(args.profile !== undefined ? { profile: args.profile } : {}),
    ...(args.run_id !== undefined ? { run_id: args.run_id } : {}),
    ...(args.idempotency_key !== undefined ? { idempotency_key: args.idempotency_key } : {}),
  };
}

const UNREACHABLE_TEXT: Record<UnreachableReason, string> = {
  ENOENT: "there is no socket at that path",
  ENOTDIR: "there is no socket at that path",
  ECONNREFUSED: "nothing listens there",
  EACCES: "this server's user may not connect to that socket",
  EPERM: "this server's user may not connect to that socket",
};

/** What the caller sees when the broker cannot be reached: a capability that is missing, not a crash. */
function unreachable(reason: UnreachableReason, socketPath: string): InfraAnswer {
  return {
    outcome: "blocked",
    code: "MISSING_EXECUTION_CAPABILITY",
    message:
      `No infrastructure broker answers at ${socketPath} (RELAY_SHELL_INFRA_SOCKET): ` +
      `${UNREACHABLE_TEXT[reason]} (${reason}). Nothing was sent and nothing ran; ` +
      "the operator has to start relay-shell infra-broker on that socket or give this server access to it.",
    receipt_id: null,
    data: null,
    replayed: false,
  };
}

interface InfraAnswer {
  outcome: OutcomeClass;
  code: OutcomeCode;
  message: string;
  receipt_id: string | null;
  data: Record<string, unknown> | null;
  replayed: boolean;
}

/** The broker's answer as the tools show it (the runner neutralizes its strings for a terminal). */
function answerOf(response: InfraResponse): InfraAnswer {
  return {
    outcome: response.outcome,
    code: response.code,
    message: response.message,
    receipt_id: response.receipt_id,
    data: response.data === undefined ? null : response.data,
    replayed: response.replayed === true,
  };
}

/** One line per fact: text from the broker must not forge the lines after it. */
function oneLine(text: string): string {
  return text.replace(/[\r\n\u2028\u2029]+/g, " ");
}

/**
 * The body of an infra result: `<outcome>: <CODE>`, the broker's sentence on
 * one line, `receipt: <id>` (`none` when the broker was not reached), then
 * `replayed: …` and `data: <compact JSON>` when they apply.
 */
function infraBody(answer: InfraAnswer): string {
  const lines = [
    `${answer.outcome}: ${answer.code}`,
    oneLine(answer.message),
    `receipt: ${answer.receipt_id === null ? "none" : oneLine(answer.receipt_id)}`,
  ];
  if (answer.replayed) lines.push("replayed: the first outcome of this idempotency key; nothing ran again");
  if (answer.data !== null) lines.push(`data: ${JSON.stringify(answer.data)}`);
  return lines.join("\n");
}

/** Failures after the request was sent, where a replicate may already have written. */
const SENT_FAILURES = new Set(["INFRA_TIMEOUT", "INFRA_NO_RESPONSE", "INFRA_ABORTED"]);
const REPLICATE_HINT =
  "; the replicate may have run: call infra_replicate again with the same idempotency_key to get its outcome " +
  "(the broker never writes twice under one key)";

async function ask(
  deps: InfraToolDeps,
  request: InfraRequest,
  ctx: ToolContext,
  timeoutSeconds: number,
): Promise<ToolOutcome> {
  /** `foreign`: the broker's own answer; otherwise the relay's (nothing answered on the socket). */
  let answer: { foreign: boolean; value: InfraAnswer };
  try {
    const exchange = await requestInfra(request, {
      socketPath: deps.socketPath,
      timeoutMs: timeoutSeconds * 1000,
      signal: ctx.signal,
    });
    answer =
      exchange.kind === "unreachable"
        ? { foreign: false, value: unreachable(exchange.reason, exchange.socketPath) }
        : { foreign: true, value: answerOf(exchange.response) };
  } catch (err) {
    if (!(err instanceof RelayError)) throw err;
    const hint = request.op === "replicate" && SENT_FAILURES.has(err.code) ? REPLICATE_HINT : "";
    if (err.code === "INFRA_TIMEOUT")
      return { body: "", timedOutAfter: timeoutSeconds, timeoutSuffix: err.message + hint };
    if (hint === "") throw err;
    throw new RelayError(err.type, err.message + hint, { code: err.code, cause: err });
  }
  const { foreign, value } = answer;
  // Links this record to the broker's own receipt of the same request.
  const auditExtra = { outcome_code: value.code, receipt_id: value.receipt_id };
  if (!foreign) return { body: infraBody(value), fields: { ...value }, auditExtra };
  // Its sentence and data can quote the receiver (names from an rsync listing): foreign text.
  return {
    body: "",
    foreign: { fields: { ...value }, body: (fields) => infraBody(fields as unknown as InfraAnswer) },
    auditExtra,
  };
}

/**
 * The `infra_*` tools: typed requests to the INFRA-1 broker daemon over its
 * Unix socket. Nothing in them names a host, path, user or command: the
 * profile fixes all of that on the broker's side. Listed only when
 * RELAY_SHELL_INFRA_SOCKET is set (docs/tools.md#infra-tools).
 */
export function createInfraTools(deps: InfraToolDeps): Tool[] {
  const longWait = deps.maxTimeoutSeconds;
  const shortWait = Math.min(STATUS_TIMEOUT_SECONDS, deps.maxTimeoutSeconds);
  const budget = () => deps.maxOutput;
  const common = {
    budget,
    targets: infraTargets,
    auditArgs: infraAuditArgs,
    resultFields: RESULT_FIELDS,
  };

  const status = defineTool({
    ...common,
    name: "infra_status",
    title: "Infrastructure broker status",
    description:
      "Ask the infrastructure broker whether it is up, which profiles this server may use and which profile " +
      "files are broken (with why). Read-only. Answers `<outcome>: <CODE>`, a sentence, the broker's receipt id " +
      "and data.",
    params: {},
    tier: READ_ONLY,
    annotations: annotationsFor(READ_ONLY, { openWorld: true }),
    policyText: () => infraPolicyText("status", {}),
    run: (_a, ctx) => ask(deps, { op: "status" }, ctx, shortWait),
  });

  const probe = defineTool({
    ...common,
    name: "infra_probe",
    title: "Probe a profile's receiver",
    description:
      "Have the infrastructure broker connect to a profile's receiver with its pinned host key and key, and " +
      "list the remote root; proves pin, credential and receiver without changing anything. Read-only.",
    params: { profile: PROFILE },
    tier: READ_ONLY,
    annotations: annotationsFor(READ_ONLY, { openWorld: true }),
    policyText: (a) => infraPolicyText("probe", a),
    act: infraAct("probe"),
    run: (a, ctx) => ask(deps, withApproval({ op: "probe", profile: a.profile }, ctx), ctx, longWait),
  });

  const dryRun = defineTool({
    ...common,
    name: "infra_rsync_dry_run",
    title: "Preview a replication",
    description:
      "Snapshot a profile's source roots and preview, with rsync --dry-run, what infra_replicate would copy into " +
      "the run directory run_id. Writes nothing remotely; a profile may require it before infra_replicate.",
    params: { profile: PROFILE, run_id: RUN },
    tier: REVERSIBLE,
    annotations: annotationsFor(REVERSIBLE, { openWorld: true }),
    policyText: (a) => infraPolicyText("rsync-dry-run", a),
    act: infraAct("rsync-dry-run"),
    run: (a, ctx) =>
      ask(
        deps,
        withApproval({ op: "rsync-dry-run", profile: a.profile, run_id: a.run_id }, ctx),
        ctx,
        longWait,
      ),
  });

  const replicate = defineTool({
    ...common,
    name: "infra_replicate",
    title: "Replicate into a new run directory",
    description:
      "Copy the dry-run's snapshot of a profile's source roots into the new, immutable run directory run_id on " +
      "the receiver; never deletes or overwrites. idempotency_key makes a retry safe: the same key returns the " +
      "first outcome and never writes twice. An interrupted copy is `unknown`: check it with infra_verify.",
    params: {
      profile: PROFILE,
      run_id: RUN,
      idempotency_key: {
        type: "string",
        description:
          "8..128 of A-Z a-z 0-9 _ : -, one per intended replication; reuse it only to retry that one",
        pattern: IDEMPOTENCY_KEY,
      },
    },
    tier: STATEFUL,
    // The idempotency key makes a repeated call return the first outcome.
    annotations: annotationsFor(STATEFUL, { openWorld: true, idempotent: true }),
    policyText: (a) => infraPolicyText("replicate", a),
    act: infraAct("replicate"),
    run: (a, ctx) =>
      ask(
        deps,
        withApproval(
          { op: "replicate", profile: a.profile, run_id: a.run_id, idempotency_key: a.idempotency_key },
          ctx,
        ),
        ctx,
        longWait,
      ),
  });

  const verify = defineTool({
    ...common,
    name: "infra_verify",
    title: "Verify a replicated run",
    description:
      "Compare the checksums of a run's manifest with the run directory on the receiver; a run is trusted only " +
      "after this answers ok. Read-only.",
    params: { profile: PROFILE, run_id: RUN },
    tier: READ_ONLY,
    annotations: annotationsFor(READ_ONLY, { openWorld: true }),
    policyText: (a) => infraPolicyText("verify", a),
    act: infraAct("verify"),
    run: (a, ctx) =>
      ask(deps, withApproval({ op: "verify", profile: a.profile, run_id: a.run_id }, ctx), ctx, longWait),
  });

  return [status, probe, dryRun, replicate, verify];
}

/**
 * The request with the approval the relay's consent gate attached to this
 * call, when it attached one: the model never supplies it, and the broker
 * verifies it again against its own allowed signers.
 */
function withApproval(request: InfraRequest, ctx: ToolContext): InfraRequest {
  const approval = ctx.consent;
  if (approval === undefined) return request;
  const { request: id, nonce, payload, signature, signer } = approval;
  return { ...request, approval: { request: id, nonce, payload, signature, signer } };
}
