import type { AuditAction } from "../audit/index.js";
import type { FollowUpPlan } from "../broker/index.js";
import type { RunOutcome, Tier } from "../core/index.js";
import type {
  Classification,
  EffectivePolicy,
  HostRef,
  PolicyTarget,
  ProgramInput,
  TierSpec,
} from "../policy/index.js";
import type { FanoutOutcome } from "./fanout.js";
import { type ArgParser, type ArgsOf, createArgParser, type ParamTable, toInputSchema } from "./params.js";

/** Structured fields taken from elsewhere, and how the body restates them. */
export interface ForeignFields {
  fields: Record<string, unknown>;
  body(fields: Record<string, unknown>): string;
}

/**
 * A human's approval of exactly this call, as the consent gate verified and
 * consumed it: a tool that hands the act to another program (the INFRA
 * broker) passes it along so that program can verify it again itself.
 */
interface ConsentCapability {
  request: string;
  nonce: string;
  /** The exact bytes that were signed. */
  payload: string;
  /** The armored OpenSSH signature over `payload`. */
  signature: string;
  /** The principal the relay found for the signing key. */
  signer: string;
}

/** A host a call reaches: the name the call gave, and where it leads. */
export interface CallHost {
  name: string;
  ref: HostRef;
}

/** What a tool learns about the call it serves. */
export interface ToolContext {
  signal: AbortSignal;
  requestId: string;
  clientId: string;
  /** Present when the consent gate let this call run on a signed approval. */
  consent?: ConsentCapability;
  /**
   * What admission judged for this call: its policy text and tier. A tool
   * whose policy text depends on state the relay keeps (the line pending on a
   * terminal) checks that it still holds before it acts, since a gate may
   * have waited in between.
   */
  admitted?: { policyText: string; tier: Tier };
  /**
   * Hosts of a fan-out their own policy refused or holds (docs/policy.md),
   * by the name the call gave: the tool reports each with its error and
   * never dials it. Absent when every host may run.
   */
  hostRefusals?: ReadonlyMap<string, Error>;
  /** Report progress to the client (MCP progress notifications); a no-op when it asked for none. */
  progress(done: number, total: number, message?: string): void;
}

/**
 * What a tool returns. The runner turns it into the contract's text: the
 * tool never writes `[exit N]`, `[TIMEOUT …]` or `[ERROR …]` itself.
 */
export interface ToolOutcome {
  body: string;
  /** Present for command-style tools: the runner prefixes `[exit N]` (null = no status reported). */
  exitCode?: number | null;
  /** The clamped timeout in seconds when the work timed out; the body is then discarded. */
  timedOutAfter?: number;
  /** Text after `[TIMEOUT after Ns]` (transfers name the partial file). */
  timeoutSuffix?: string;
  /** Bytes the work really produced when the body was already cut while draining. */
  producedBytes?: number;
  /**
   * A command run on many hosts: the runner writes the body from it, one
   * JSON object with every host's result fitted into the call's budget.
   */
  fanout?: FanoutOutcome;
  /**
   * Text from outside the relay returned as structured fields (the INFRA
   * broker's answer): the runner neutralizes every string in them, keys
   * included, then writes the body from the neutralized fields with `body`.
   * Takes the place of `body` and `fields`.
   */
  foreign?: ForeignFields;
  /** Tool-specific structuredContent fields (declared in `resultFields`). */
  fields?: Record<string, unknown>;
  /**
   * The body is one JSON object (a fan-out's always is): trailing notices go
   * into its `notices` array instead of after it, so the text still parses.
   */
  json?: boolean;
  /**
   * Facts only known once the work ran that belong in the audit record (the
   * recording file of a new session). Merged into the recorded args after
   * redaction; never part of the call's identity, which was fixed before.
   */
  auditExtra?: Record<string, unknown>;
}

/** What a command that ran, locally or on a host, leaves for its result. */
type CommandRun = Pick<RunOutcome, "timedOut" | "output" | "exitCode" | "droppedBytes" | "totalBytes">;

/**
 * The outcome of a command-style tool: a timeout discards the output, else
 * the output with its exit status, and when the capture dropped bytes, how
 * many the command really wrote (the truncation marker reports that size).
 */
export function commandOutcome(
  run: CommandRun,
  timeoutSeconds: number,
  fields: Record<string, unknown>,
): ToolOutcome {
  if (run.timedOut) return { body: "", timedOutAfter: timeoutSeconds, fields };
  return {
    body: run.output,
    exitCode: run.exitCode,
    ...(run.droppedBytes > 0 ? { producedBytes: run.totalBytes } : {}),
    fields,
  };
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * Who is calling, for a tool whose policy text reads state the relay keeps for
 * a client (a session's pending line): it must never read another client's.
 */
export interface CallScope {
  clientId: string;
}

/** A tier the call has at least whatever its text says, and why (an interactive program, an edited line). */
export type TierFloor = Classification;

/** What a human approves of one call under consent: plain JSON values, canonicalised before signing. */
type BoundValues = Record<string, unknown>;

/**
 * A tool is data: the runner does the deciding, bounding, auditing and formatting.
 * `C` is what the tool's `act` needs to resolve its targets; see `act`.
 */
export interface ToolDef<P extends ParamTable, C = unknown> {
  name: string;
  title: string;
  description: string;
  params: P;
  tier: TierSpec;
  annotations: ToolAnnotations;
  /**
   * The tool only answers from the relay's own state: it starts no process,
   * writes to no terminal, dials no host and hands nothing to another program
   * (server_info, audit_tail, session_list). Only such a tool keeps answering
   * while the audit log cannot be written; every other tool acts, whatever its
   * tier, and is refused then (fail closed: a tool that does not say so acts).
   */
  introspection?: boolean;
  /** Output budget in bytes before clamp_output. */
  budget(args: ArgsOf<P>): number;
  /** Every byte the executor will consume (docs/wire-contract.md §5.4). */
  policyText(args: ArgsOf<P>, scope: CallScope): string;
  /**
   * A tier the call has at least, whatever the classifier finds in its text:
   * starting a shell or a console, a terminal line edited by control keys.
   * Admission raises the classification to it when it is higher (the runner
   * stays the one place that decides). null = no floor beyond the tool's.
   */
  tierFloor?(args: ArgsOf<P>, scope: CallScope): TierFloor | null;
  /**
   * The same bytes in their parts, for a tool that runs a program in a known
   * language: the classifier reads the program as that language, with its
   * stdin and environment bound, instead of the joined policy text. The
   * deny and allow lists still see the policy text.
   */
  programInput?(args: ArgsOf<P>): ProgramInput;
  /** The target and parameters to record (raw; the runner redacts). */
  auditArgs(args: ArgsOf<P>, scope: CallScope): Record<string, unknown>;
  /**
   * Where the call acts beyond its policy text (working directory, hosts,
   * users, paths, listen address, interpreter): the deny list sees each as its
   * own line (ADR 0020). Never throws; what cannot be resolved is left out.
   */
  targets?(args: ArgsOf<P>): PolicyTarget[];
  /**
   * The hosts the call reaches, each by the name the call gave and as the
   * SSH layer resolves it: the runner finds each one's policy (docs/policy.md).
   * Throws when a name cannot be resolved, and the call is then refused: a
   * host whose policy is unknown is not dialled.
   */
  hosts?(args: ArgsOf<P>): CallHost[];
  /** JSON Schema of each tool-specific structuredContent field. */
  resultFields?: Record<string, Record<string, unknown>>;
  /**
   * How a verify or rollback command bound to a confirmed call becomes this
   * tool's arguments: the same target (host, identity, cwd, ...) with the
   * command in place of the original one. A tool without it cannot be armed
   * with follow-up commands.
   */
  followUp?(args: ArgsOf<P>, command: string): ArgsOf<P>;
  /** Audit action of every call of this tool (operation_confirm under rollback pairing: `confirm_arm`). */
  auditAction?: AuditAction;
  /**
   * Audit args of a call whose arguments failed validation (default: the raw
   * arguments, redacted). A tool whose input holds a credential maps it away here.
   */
  auditInvalid?(raw: Record<string, unknown>): Record<string, unknown>;
  /**
   * The act a human approves under consent (docs/consent.md, "bound
   * arguments"): the arguments that decide what the call does, resolved as
   * `run` will resolve them, so the approval binds the real target. `ctx`
   * holds what resolving needs (the host directory, the sessions, the calling
   * client); the consent wiring in tools/ builds it and is the only caller, so
   * the runner, which never binds an act, does not know its type and carries
   * it as `unknown`. Throws to refuse. A tool without it cannot be approved.
   */
  act?: (args: ArgsOf<P>, ctx: C) => BoundValues | Promise<BoundValues>;
  run(args: ArgsOf<P>, ctx: ToolContext): Promise<ToolOutcome>;
}

/** A registered tool with its argument type erased, as the runner and server see it. */
export interface Tool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly tier: TierSpec;
  readonly annotations: ToolAnnotations;
  readonly introspection: boolean;
  readonly inputSchema: ReturnType<typeof toInputSchema>;
  readonly resultFields: Record<string, Record<string, unknown>>;
  parse: ArgParser<unknown>["parse"];
  budget(args: unknown): number;
  policyText(args: unknown, scope: CallScope): string;
  readonly tierFloor?: (args: unknown, scope: CallScope) => TierFloor | null;
  readonly programInput?: (args: unknown) => ProgramInput;
  auditArgs(args: unknown, scope: CallScope): Record<string, unknown>;
  readonly targets?: (args: unknown) => PolicyTarget[];
  readonly hosts?: (args: unknown) => CallHost[];
  readonly followUp?: (args: unknown, command: string) => unknown;
  readonly auditAction?: AuditAction;
  readonly auditInvalid?: (raw: Record<string, unknown>) => Record<string, unknown>;
  /** ToolDef.act; `ctx` must be the context the tool's act was written for. */
  readonly act?: (args: unknown, ctx: unknown) => BoundValues | Promise<BoundValues>;
  run(args: unknown, ctx: ToolContext): Promise<ToolOutcome>;
}

export function defineTool<P extends ParamTable, C = unknown>(def: ToolDef<P, C>): Tool {
  const parser = createArgParser(def.params);
  // Only values produced by `parse` reach the other functions, so the cast is sound.
  const typed = (args: unknown) => args as ArgsOf<P>;
  const followUp = def.followUp;
  const targets = def.targets;
  const hosts = def.hosts;
  const programInput = def.programInput;
  const tierFloor = def.tierFloor;
  const act = def.act;
  return {
    name: def.name,
    title: def.title,
    description: def.description,
    tier: def.tier,
    annotations: def.annotations,
    introspection: def.introspection ?? false,
    inputSchema: toInputSchema(def.params),
    resultFields: def.resultFields ?? {},
    parse: (raw) => parser.parse(raw),
    budget: (args) => def.budget(typed(args)),
    policyText: (args, scope) => def.policyText(typed(args), scope),
    ...(tierFloor ? { tierFloor: (args: unknown, scope: CallScope) => tierFloor(typed(args), scope) } : {}),
    ...(programInput ? { programInput: (args: unknown) => programInput(typed(args)) } : {}),
    auditArgs: (args, scope) => def.auditArgs(typed(args), scope),
    ...(targets ? { targets: (args: unknown) => targets(typed(args)) } : {}),
    ...(hosts ? { hosts: (args: unknown) => hosts(typed(args)) } : {}),
    ...(followUp ? { followUp: (args: unknown, command: string) => followUp(typed(args), command) } : {}),
    ...(def.auditAction ? { auditAction: def.auditAction } : {}),
    ...(def.auditInvalid ? { auditInvalid: def.auditInvalid } : {}),
    // Its one caller hands every tool the same context, the one the acts are written for.
    ...(act ? { act: (args: unknown, ctx: unknown) => act(typed(args), ctx as C) } : {}),
    run: (args, ctx) => def.run(typed(args), ctx),
  };
}

/** Annotations that follow from a tool's tier (docs/wire-contract.md §14.15). */
export function annotationsFor(
  spec: TierSpec,
  options: { openWorld: boolean; idempotent?: boolean },
): ToolAnnotations {
  const readOnly = spec.kind === "fixed" && spec.tier === 0;
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly && !(spec.kind === "fixed" && spec.tier === 1),
    idempotentHint: options.idempotent ?? readOnly,
    openWorldHint: options.openWorld,
  };
}

/** The identity of one admitted call, as a gate sees it. */
export interface CallIdentity {
  tool: string;
  policyText: string;
  /** Raw (unredacted) audit args: the target of the call. */
  auditArgs: Record<string, unknown>;
  tier: Tier;
  /** Why the call has its tier (the classifier's basis, and the part that decided it). */
  basis: string;
  /** The validated arguments (kept by a gate that must later re-derive the call, never logged). */
  args: unknown;
  /** The MCP session the call came in on (a stdio connection, or an HTTP session of one client). */
  session: string;
  /** Verify/rollback commands an earlier gate bound to this call: they run with it, so they are part of the act. */
  followUps?: FollowUpPlan;
  /**
   * The policy that admitted the call (docs/policy.md): whether it asks for a
   * Tier-3 confirmation or consent, and its lease mode (absent: the consent
   * gate's own, the settings').
   */
  policy: Pick<EffectivePolicy, "name" | "confirmTier3" | "consent"> &
    Partial<Pick<EffectivePolicy, "consentLeaseMode">>;
}

export type GateVerdict =
  | {
      kind: "proceed";
      action?: AuditAction;
      /** Verify/rollback commands bound to the confirmation this call consumed (ADR 0010). */
      followUps?: FollowUpPlan;
      /** The approval this call runs on, handed to the tool (see ToolContext.consent). */
      consent?: ConsentCapability;
      /** Facts the gate adds to the call's audit record, recorded unredacted: only the relay's own, never the caller's text or a credential. */
      auditExtra?: Record<string, unknown>;
      /** Undo what this gate spent (a burnt token) when a later gate stops the call; never rejects. */
      release?: () => void | Promise<void>;
    }
  | {
      kind: "challenge";
      text: string;
      action: AuditAction;
      /** The metrics outcome of a challenge (default confirm_required). */
      outcome?: "confirm_required" | "consent_required";
      auditExtra?: Record<string, unknown>;
    }
  | { kind: "refuse"; reason: string; action: AuditAction; auditExtra?: Record<string, unknown> };

/**
 * A control consulted after policy admitted a call (the Tier-3 confirmation
 * broker, human consent). Gates run in order; the first challenge or refusal
 * wins. A gate may answer later (a store, a wait for a human).
 */
export interface Gate {
  readonly name: string;
  check(call: CallIdentity, ctx: ToolContext): GateVerdict | Promise<GateVerdict>;
}
