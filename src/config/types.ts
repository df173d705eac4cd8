import type { TerminalOutputMode } from "../core/index.js";

type Transport = "stdio" | "http";
export type KnownHostsMode = "strict" | "accept-new" | "ignore";
export type AuditFormat = "jsonl" | "cef" | "leef";
export type PolicyMode = "open" | "guarded" | "readonly";
/** How long a signed read covers more reads (docs/consent.md): none, a short window, or the consent session. */
export type ConsentLeaseMode = "manual" | "window" | "session";

/**
 * The one typed, frozen settings object parsed from `RELAY_SHELL_*`
 * (docs/wire-contract.md §4 and §14). Field names are the variable names in
 * camelCase without the prefix. Durations are seconds, sizes bytes, paths
 * absolute with `~` expanded.
 */
export interface Settings {
  // transport (docs/wire-contract.md §4.2)
  transport: Transport;
  httpHost: string;
  httpPort: number;
  httpPath: string;
  allowUnauthNetwork: boolean;
  // limits (docs/wire-contract.md §4.3)
  maxOutput: number;
  maxOutputHard: number;
  defaultTimeout: number;
  maxTimeout: number;
  maxSessions: number;
  maxForwards: number;
  maxConns: number;
  sessionIdleTimeout: number;
  sessionLifetime: number;
  sessionBufferBytes: number;
  sessionRecordDir: string; // "" = no recordings
  sessionRecordInput: boolean;
  maxInput: number;
  /** How terminal control sequences in host output reach the client (ADR 0016). */
  terminalOutput: TerminalOutputMode;
  // policy (docs/wire-contract.md §4.4)
  policyMode: PolicyMode;
  policyDeny: RegExp | null;
  policyAllow: RegExp | null;
  /** The policy per host and per tag, TOML or JSON (docs/policy.md); "" = none. */
  policyFile: string;
  unsafeNotices: boolean;
  /** policy_explain may show the text of the pattern that matched, not only where it was written. */
  policyExplainPatterns: boolean;
  // broker (docs/wire-contract.md §4.5)
  confirmTier3: boolean;
  confirmTtl: number;
  confirmRollback: boolean;
  // audit (docs/wire-contract.md §4.6, §14.11, §14.16)
  auditPath: string;
  auditStderr: boolean;
  auditFormat: AuditFormat;
  auditChain: boolean;
  auditFailClosed: boolean;
  // seccomp (docs/wire-contract.md §4.7, §14.13: accepted, not implemented)
  seccompNotify: boolean;
  seccompNotifyCap: number;
  // ssh (docs/wire-contract.md §4.8, §14.3, §14.6, §14.16)
  sshConfig: string;
  inventory: string; // "" = none
  sshKnownHosts: KnownHostsMode;
  sshKnownHostsFile: string;
  sshConnectTimeout: number;
  sshKeepalive: number;
  sshIdleTimeout: number;
  sshAllowWeakerKnownHosts: boolean;
  forwardBindAny: boolean;
  transferMaxBytes: number;
  transferMaxEntries: number;
  // oauth (docs/wire-contract.md §4.9)
  authEnabled: boolean;
  authIssuer: string;
  authStateDir: string;
  authSingleClient: boolean;
  authAccessTtl: number;
  authRefreshTtl: number;
  authCodeTtl: number;
  // INFRA-1 broker (docs/tools.md#infra-tools)
  infraSocket: string; // "" = no broker: the infra_* tools are not listed
  // transactional consent (docs/consent.md)
  consent: boolean;
  consentAllowedSigners: string; // "" = none (consent then refuses to start)
  consentDb: string;
  consentWait: number;
  consentLeaseMode: ConsentLeaseMode;
  consentLeaseTtl: number;
  consentLeaseBudget: number;
  consentSessionIdle: number;
  consentApprovalTtl: number;
  // the operator console (docs/console.md)
  console: boolean;
  /** The console's own loopback port when MCP is served over stdio. */
  consolePort: number;
  consolePasskeys: string; // "" = none (required with the console on)
  consoleRpId: string;
  consoleOrigin: string; // "" = http://localhost:<the port the console is served on>
  consoleSessionTtl: number;
  /** The relay's own console state (passkey sign counters). */
  consoleStateDir: string;
  // diagnostics (docs/performance.md)
  traceFile: string;
  // shared state of several relays (docs/scaling.md)
  /** `postgres://…` of the database several relays share; "" = embedded SQLite, one relay. */
  stateUrl: string;
  /** This relay's name among several: in every audit record and terminal id; "" = one relay, no name. */
  instance: string;
}
