import { isLoopbackHost } from "../core/index.js";
import type { Settings } from "./types.js";

export interface RuntimeInfo {
  /** Effective user id of the server process (0 = root). */
  euid: number;
}

/**
 * What the loader noticed in the values themselves, per settings object it
 * returned: a lenient setting whose value named none of its words (the
 * settings hold only the word used instead, so the text is kept here).
 */
const LOAD_WARNINGS = new WeakMap<Settings, readonly string[]>();

/** Keep the loader's warnings for `settings`, for configWarnings to report with the others. */
export function rememberLoadWarnings(settings: Settings, warnings: readonly string[]): void {
  if (warnings.length > 0) LOAD_WARNINGS.set(settings, Object.freeze([...warnings]));
}

/**
 * Operator-facing warnings about the live settings (docs/wire-contract.md §8.7). A pure
 * function of its inputs, recomputed on every call so that `server_info`
 * never reports a stale posture. An empty list does not mean "secure".
 */
export function configWarnings(settings: Settings, runtime: RuntimeInfo): string[] {
  const warnings: string[] = [];
  if (runtime.euid === 0) warnings.push("running as root: every command runs with full host privileges");
  if (settings.policyMode === "open" && settings.policyDeny === null && !settings.confirmTier3) {
    warnings.push(
      settings.consent
        ? "policy is open with no deny list and no Tier-3 confirmation: policy refuses nothing, but human consent holds every call that is not a proven read (Tier 0) until an operator approves it"
        : "policy is open with no deny list and no Tier-3 confirmation: nothing is refused",
    );
  }
  if (settings.sshKnownHosts === "accept-new" || settings.sshKnownHosts === "ignore") {
    warnings.push(`ssh_known_hosts=${settings.sshKnownHosts}: SSH host keys are not strictly verified`);
  }
  if (settings.sshAllowWeakerKnownHosts) {
    warnings.push("per-call known_hosts may weaken host-key checking below the server default");
  }
  if (settings.transport === "http" && !settings.authEnabled) {
    warnings.push("HTTP transport without OAuth: anyone who can reach the listener can run commands");
  }
  if (!settings.auditChain)
    warnings.push("audit hash chain is off: edits to the audit log are not detectable");
  if (settings.seccompNotify) {
    warnings.push(
      "seccomp syscall audit channel is not implemented; RELAY_SHELL_SECCOMP_NOTIFY has no effect",
    );
  }
  if (settings.forwardBindAny) {
    warnings.push("forwards may listen on every interface (RELAY_SHELL_FORWARD_BIND_ANY=true)");
  }
  if (settings.terminalOutput === "raw") {
    warnings.push(
      "terminal output is raw (RELAY_SHELL_TERMINAL_OUTPUT=raw): host output can drive the client's terminal",
    );
  }
  if (unauthenticatedNetworkBind(settings) && settings.allowUnauthNetwork) {
    warnings.push(
      "unauthenticated HTTP listener on a non-loopback address (RELAY_SHELL_ALLOW_UNAUTH_NETWORK=true)",
    );
  }
  warnings.push(...(LOAD_WARNINGS.get(settings) ?? []));
  warnings.push(...consentWarnings(settings));
  return warnings;
}

/** Lease settings past which consent stops meaning "a human saw this act" (docs/consent.md). */
const LONG_LEASE_TTL = 900;
const LARGE_LEASE_BUDGET = 100;
const LONG_APPROVAL_TTL = 900;
const LONG_CONSENT_WAIT = 600;

function consentWarnings(settings: Settings): string[] {
  if (!settings.consent) return [];
  const warnings: string[] = [];
  if (settings.consentLeaseMode === "session") {
    warnings.push(
      `consent lease mode is session: one signed read covers up to ${settings.consentLeaseBudget} reads for the whole MCP session`,
    );
  }
  if (settings.consentLeaseMode !== "manual" && settings.consentLeaseTtl > LONG_LEASE_TTL) {
    warnings.push(`consent read lease lasts ${settings.consentLeaseTtl}s (RELAY_SHELL_CONSENT_LEASE_TTL)`);
  }
  if (settings.consentLeaseMode !== "manual" && settings.consentLeaseBudget > LARGE_LEASE_BUDGET) {
    warnings.push(
      `consent read lease allows ${settings.consentLeaseBudget} reads (RELAY_SHELL_CONSENT_LEASE_BUDGET)`,
    );
  }
  if (settings.consentApprovalTtl > LONG_APPROVAL_TTL) {
    warnings.push(
      `consent approvals stay usable for ${settings.consentApprovalTtl}s (RELAY_SHELL_CONSENT_APPROVAL_TTL)`,
    );
  }
  if (settings.consentWait > LONG_CONSENT_WAIT) {
    warnings.push(`a call may wait ${settings.consentWait}s for consent (RELAY_SHELL_CONSENT_WAIT)`);
  }
  return warnings;
}

function unauthenticatedNetworkBind(settings: Settings): boolean {
  return settings.transport === "http" && !settings.authEnabled && !isLoopbackHost(settings.httpHost);
}

/**
 * The start-up refusal of an unauthenticated HTTP listener on a non-loopback
 * address (docs/wire-contract.md §9.1), or null when the bind is acceptable.
 */
export function checkBindSafety(settings: Settings): string | null {
  if (!unauthenticatedNetworkBind(settings) || settings.allowUnauthNetwork) return null;
  const host =
    settings.httpHost.includes(":") && !settings.httpHost.startsWith("[")
      ? `[${settings.httpHost}]`
      : settings.httpHost;
  return (
    `refusing to serve HTTP on ${host}:${settings.httpPort} without OAuth: the address is not loopback. ` +
    "Set RELAY_SHELL_AUTH_ENABLED=true, bind a loopback address, or set " +
    "RELAY_SHELL_ALLOW_UNAUTH_NETWORK=true to accept that anyone who can reach it can run commands"
  );
}
