import type { AuditLog } from "../audit/index.js";
import { configWarnings, type Settings } from "../config/index.js";
import { ledgerPath } from "../consent/index.js";
import { clamp } from "../core/index.js";
import type { EffectivePolicy, TierSpec } from "../policy/index.js";
import { annotationsFor, clampOutput, defineTool, type Tool } from "../runner/index.js";

/** Facts about the running process, gathered once at start-up by the CLI. */
export interface RuntimeInfo {
  uid: number;
  euid: number;
  user: string;
  sudoBinary: string;
  /** Which process launcher starts commands: the native program (ADR 0031) or its Node twin. */
  launcher: "native" | "node";
}

export interface DiagnosticsDeps {
  settings: Settings;
  audit: AuditLog;
  version: string;
  runtime: RuntimeInfo;
  /** Every policy in force, the default first (docs/policy.md). */
  policies?: readonly EffectivePolicy[];
  /** Live counts owned by other parts of the server (pending tokens, sessions, ...). */
  live?: {
    confirmPending?: () => Promise<number>;
    inventoryHosts?: () => number | null;
    /** Consent requests waiting for a human (null when the store cannot be read). */
    consentPending?: () => Promise<number | null>;
  };
}

const READ_ONLY: TierSpec = { kind: "fixed", tier: 0 };

/** `host:port` of the shared database, never its credentials or its name. */
function stateTarget(url: string): string {
  if (!URL.canParse(url)) return "";
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || "5432"}`;
}

/** The seccomp channel of the Python build is not implemented here (docs/wire-contract.md §14.13). */
const SECCOMP_FILTER_VERSION = 2;

export function createDiagnosticsTools(deps: DiagnosticsDeps): Tool[] {
  return [serverInfoTool(deps), auditTailTool(deps)];
}

function serverInfoTool(deps: DiagnosticsDeps): Tool {
  return defineTool({
    name: "server_info",
    title: "Server posture",
    description:
      "Report the relay's version, transport, policy mode, limits, audit sink state, confirmation posture " +
      "and configuration warnings as JSON. Read-only.",
    params: {},
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false }),
    budget: () => 4096,
    policyText: () => "",
    auditArgs: () => ({}),
    async run() {
      return { body: JSON.stringify(await serverInfo(deps), null, 2) };
    },
  });
}

/** server_info's answer (docs/tools.md#server_info): the live counts and the warnings are read now. */
async function serverInfo(deps: DiagnosticsDeps): Promise<Record<string, unknown>> {
  const { settings, runtime } = deps;
  return {
    name: "relay-shell",
    version: deps.version,
    transport: settings.transport,
    policy_mode: settings.policyMode,
    terminal_output: settings.terminalOutput,
    runtime: runtimeSection(runtime),
    limits: limitsSection(settings),
    audit: auditSection(deps.audit, settings),
    confirm: {
      tier3: settings.confirmTier3,
      ttl: settings.confirmTtl,
      pending: (await deps.live?.confirmPending?.()) ?? 0,
      rollback: settings.confirmRollback,
    },
    // Only for several relays on one state, so one relay's answer is unchanged (docs/scaling.md).
    ...(settings.stateUrl !== "" ? { state: stateSection(settings) } : {}),
    // Only where a policy file or the inventory adds policies, so one policy's answer is unchanged.
    ...(policiesSection(deps.policies) ?? {}),
    // Only with consent on, so the default posture's answer is unchanged (docs/consent.md).
    ...(settings.consent || deps.policies?.some((p) => p.consent)
      ? { consent: consentSection(settings, (await deps.live?.consentPending?.()) ?? null) }
      : {}),
    seccomp: {
      notify: settings.seccompNotify,
      supported: false,
      reason: "not implemented",
      cap: settings.seccompNotifyCap,
      filter_version: SECCOMP_FILTER_VERSION,
    },
    ssh: sshSection(settings, deps.live?.inventoryHosts?.() ?? null),
    // Computed from the live settings on every call, never cached.
    warnings: configWarnings(settings, { euid: runtime.euid }),
  };
}

/** The policies in force, by what they decide; a pattern is counted, never shown. */
function policiesSection(policies: readonly EffectivePolicy[] | undefined) {
  if (!policies || (policies.length === 1 && policies[0]?.source === "settings")) return null;
  return {
    policies: policies.map((p) => ({
      name: p.name,
      source: p.source,
      mode: p.mode,
      deny_patterns: p.deny.length,
      allow_patterns: p.allow.length,
      consent: p.consent,
      lease_mode: p.consentLeaseMode,
      confirm_tier3: p.confirmTier3,
      max_tier: p.maxTier,
    })),
  };
}

function runtimeSection(runtime: RuntimeInfo) {
  return {
    uid: runtime.uid,
    euid: runtime.euid,
    user: runtime.user,
    is_root: runtime.euid === 0,
    sudo_binary: runtime.sudoBinary,
    launcher: runtime.launcher,
  };
}

function limitsSection(settings: Settings) {
  return {
    default_timeout: settings.defaultTimeout,
    max_timeout: settings.maxTimeout,
    max_output: settings.maxOutput,
    max_output_hard: settings.maxOutputHard,
    max_input: settings.maxInput,
    max_sessions: settings.maxSessions,
    max_forwards: settings.maxForwards,
    max_conns: settings.maxConns,
  };
}

function auditSection(audit: AuditLog, settings: Settings) {
  const status = audit.status();
  return {
    path: status.path,
    degraded: status.degraded,
    degraded_reason: status.degradedReason,
    format: status.format,
    chain: status.chain,
    fail_closed: settings.auditFailClosed,
    write_failures: status.writeFailures,
  };
}

function stateSection(settings: Settings) {
  return { backend: "postgresql", target: stateTarget(settings.stateUrl), instance: settings.instance };
}

function consentSection(settings: Settings, pending: number | null) {
  return {
    enabled: true,
    allowed_signers: settings.consentAllowedSigners,
    ledger: ledgerPath(settings.consentAllowedSigners),
    ...(settings.consolePasskeys === ""
      ? {}
      : {
          passkeys: {
            file: settings.consolePasskeys,
            rp_id: settings.consoleRpId,
            origin: settings.consoleOrigin,
          },
        }),
    db: settings.consentDb,
    lease_mode: settings.consentLeaseMode,
    lease_ttl: settings.consentLeaseTtl,
    lease_budget: settings.consentLeaseBudget,
    session_idle: settings.consentSessionIdle,
    approval_ttl: settings.consentApprovalTtl,
    wait: settings.consentWait,
    pending,
  };
}

function sshSection(settings: Settings, inventoryHosts: number | null) {
  return {
    known_hosts_default: settings.sshKnownHosts,
    inventory_hosts: inventoryHosts,
    ssh_config: settings.sshConfig,
    connect_timeout: settings.sshConnectTimeout,
    keepalive: settings.sshKeepalive,
    idle_timeout: settings.sshIdleTimeout,
  };
}

/** audit_tail's filters, as the audit log's tail takes them: only those the call sets. */
function tailFilters(a: { tool: string; tier: number; denied: boolean | null }) {
  return {
    ...(a.tool !== "" ? { tool: a.tool } : {}),
    ...(a.tier >= 0 ? { tier: a.tier } : {}),
    ...(a.denied !== null ? { denied: a.denied } : {}),
  };
}

function auditTailTool({ settings, audit }: DiagnosticsDeps): Tool {
  return defineTool({
    name: "audit_tail",
    title: "Recent audit records",
    description:
      "Return the newest audit records (JSON lines, oldest first), optionally filtered by tool, tier or " +
      "denied flag within the scanned window. Records hold hashes of outputs, never the outputs.",
    params: {
      lines: { type: "integer", description: "size of the scanned window, 1..1000", default: 50 },
      tool: { type: "string", description: "exact tool name filter; empty = any", default: "" },
      tier: { type: "integer", description: "tier filter 0..3; negative = any", default: -1 },
      denied: {
        type: "boolean_or_null",
        description: "filter on the denied flag; null = any",
        default: null,
      },
    },
    tier: READ_ONLY,
    introspection: true,
    annotations: annotationsFor(READ_ONLY, { openWorld: false }),
    budget: () => clampOutput(settings.maxOutput, settings),
    policyText: () => "",
    auditArgs: (a) => ({
      lines: clamp(a.lines, 1, 1000),
      ...(a.tool !== "" ? { tool_filter: a.tool } : {}),
      ...(a.tier >= 0 ? { tier_filter: a.tier } : {}),
      ...(a.denied !== null ? { denied_filter: a.denied } : {}),
    }),
    async run(a) {
      return { body: audit.tail({ lines: clamp(a.lines, 1, 1000), ...tailFilters(a) }) };
    },
  });
}
