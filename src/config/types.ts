import type { TerminalOutputMode } from "../core/index.js";

export type Transport = "stdio" | "http";
export type KnownHostsMode = "strict" | "accept-new" | "ignore";
export type AuditFormat = "jsonl" | "cef" | "leef";
export type PolicyMode = "open" | "guarded" | "readonly";

/**
 * The one typed, frozen settings object parsed from `RELAY_SHELL_*`
 * (CONTRACT §4 and Appendix B). Field names are the variable names in
 * camelCase without the prefix. Durations are seconds, sizes bytes, paths
 * absolute with `~` expanded.
 */
export interface Settings {
  // transport (§4.2)
  transport: Transport;
  httpHost: string;
  httpPort: number;
  httpPath: string;
  allowUnauthNetwork: boolean;
  // limits (§4.3)
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
  // policy (§4.4)
  policyMode: PolicyMode;
  policyDeny: RegExp | null;
  policyAllow: RegExp | null;
  unsafeNotices: boolean;
  // broker (§4.5)
  confirmTier3: boolean;
  confirmTtl: number;
  confirmRollback: boolean;
  // audit (§4.6, Appendix B 11, 16)
  auditPath: string;
  auditStderr: boolean;
  auditFormat: AuditFormat;
  auditChain: boolean;
  auditFailClosed: boolean;
  // seccomp (§4.7, Appendix B 13: accepted, not implemented)
  seccompNotify: boolean;
  seccompNotifyCap: number;
  // ssh (§4.8, Appendix B 3, 6, 16)
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
  // oauth (§4.9)
  authEnabled: boolean;
  authIssuer: string;
  authStateDir: string;
  authSingleClient: boolean;
  authAccessTtl: number;
  authRefreshTtl: number;
  authCodeTtl: number;
}
