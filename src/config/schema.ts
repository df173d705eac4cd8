import { join } from "node:path";
import { z } from "zod";
import { TERMINAL_OUTPUT_MODES } from "../core/index.js";
import type { Settings } from "./types.js";
import {
  booleanSetting,
  enumSetting,
  hostSetting,
  instanceSetting,
  integerSetting,
  type LenientEnum,
  lenientEnumSetting,
  lenientWarning,
  originSetting,
  type PathContext,
  pathSetting,
  type RawValue,
  regexSetting,
  type SettingSchema,
  socketPathSetting,
  stateUrlSetting,
  urlPathSetting,
  urlSetting,
} from "./values.js";

/** What a signed read covers besides itself (docs/consent.md); anything else is the strictest, manual. */
const LEASE_MODE: LenientEnum<Settings["consentLeaseMode"]> = {
  env: "RELAY_SHELL_CONSENT_LEASE_MODE",
  values: ["manual", "window", "session"],
  fallback: "manual",
};

/** The settings whose unknown values fall back instead of failing start-up. */
const LENIENT_SETTINGS: readonly LenientEnum<string>[] = [LEASE_MODE];

/** One warning per lenient setting whose value (raw, by variable name) names none of its words. */
export function lenientWarnings(raw: ReadonlyMap<string, string>): string[] {
  return LENIENT_SETTINGS.flatMap((spec) => lenientWarning(spec, raw.get(spec.env)) ?? []);
}

type SettingEntry<T> = readonly [env: string, build: (env: string, ctx: PathContext) => SettingSchema<T>];
type SettingTable = { readonly [K in keyof Settings]: SettingEntry<Settings[K]> };

const int = (fallback: number, min: number, max: number) => (env: string) =>
  integerSetting(env, fallback, min, max);
const bool = (fallback: boolean) => (env: string) => booleanSetting(env, fallback);
const path = (fallback: (ctx: PathContext) => string) => (env: string, ctx: PathContext) =>
  pathSetting(env, ctx, () => fallback(ctx));

/**
 * Every `RELAY_SHELL_*` setting: variable name, type, default and range
 * (docs/configuration.md, docs/wire-contract.md §4 and §14). The mapped type makes a
 * field added to Settings without an entry here a compile error.
 */
const TABLE: SettingTable = {
  // transport
  transport: ["RELAY_SHELL_TRANSPORT", (env) => enumSetting(env, ["stdio", "http"], "stdio")],
  httpHost: ["RELAY_SHELL_HTTP_HOST", (env) => hostSetting(env, "127.0.0.1")],
  httpPort: ["RELAY_SHELL_HTTP_PORT", int(8080, 1, 65535)],
  httpPath: ["RELAY_SHELL_HTTP_PATH", (env) => urlPathSetting(env, "/mcp")],
  allowUnauthNetwork: ["RELAY_SHELL_ALLOW_UNAUTH_NETWORK", bool(false)],
  // limits
  maxOutput: ["RELAY_SHELL_MAX_OUTPUT", int(65536, 1024, 16777216)],
  maxOutputHard: ["RELAY_SHELL_MAX_OUTPUT_HARD", int(1048576, 4096, 134217728)],
  defaultTimeout: ["RELAY_SHELL_DEFAULT_TIMEOUT", int(60, 1, 86400)],
  maxTimeout: ["RELAY_SHELL_MAX_TIMEOUT", int(900, 1, 86400)],
  maxSessions: ["RELAY_SHELL_MAX_SESSIONS", int(64, 1, 1024)],
  maxForwards: ["RELAY_SHELL_MAX_FORWARDS", int(64, 1, 1024)],
  maxConns: ["RELAY_SHELL_MAX_CONNS", int(256, 1, 4096)],
  sessionIdleTimeout: ["RELAY_SHELL_SESSION_IDLE_TIMEOUT", int(1800, 10, 86400)],
  sessionLifetime: ["RELAY_SHELL_SESSION_LIFETIME", int(43200, 60, 604800)],
  sessionBufferBytes: ["RELAY_SHELL_SESSION_BUFFER_BYTES", int(262144, 4096, 16777216)],
  sessionRecordDir: ["RELAY_SHELL_SESSION_RECORD_DIR", path(() => "")],
  sessionRecordInput: ["RELAY_SHELL_SESSION_RECORD_INPUT", bool(false)],
  maxInput: ["RELAY_SHELL_MAX_INPUT", int(1048576, 1024, 134217728)],
  terminalOutput: ["RELAY_SHELL_TERMINAL_OUTPUT", (env) => enumSetting(env, TERMINAL_OUTPUT_MODES, "safe")],
  // policy
  policyMode: ["RELAY_SHELL_POLICY_MODE", (env) => enumSetting(env, ["open", "guarded", "readonly"], "open")],
  policyDeny: ["RELAY_SHELL_POLICY_DENY", regexSetting],
  policyAllow: ["RELAY_SHELL_POLICY_ALLOW", regexSetting],
  // policy per host and per tag (docs/policy.md); read and checked as a trust anchor at start-up
  policyFile: ["RELAY_SHELL_POLICY_FILE", path(() => "")],
  unsafeNotices: ["RELAY_SHELL_UNSAFE_NOTICES", bool(true)],
  policyExplainPatterns: ["RELAY_SHELL_POLICY_EXPLAIN_PATTERNS", bool(false)],
  // broker
  confirmTier3: ["RELAY_SHELL_CONFIRM_TIER3", bool(false)],
  confirmTtl: ["RELAY_SHELL_CONFIRM_TTL", int(120, 5, 3600)],
  confirmRollback: ["RELAY_SHELL_CONFIRM_ROLLBACK", bool(false)],
  // audit
  auditPath: ["RELAY_SHELL_AUDIT_PATH", path((ctx) => join(ctx.stateDir, "audit.jsonl"))],
  auditStderr: ["RELAY_SHELL_AUDIT_STDERR", bool(false)],
  auditFormat: ["RELAY_SHELL_AUDIT_FORMAT", (env) => enumSetting(env, ["jsonl", "cef", "leef"], "jsonl")],
  auditChain: ["RELAY_SHELL_AUDIT_CHAIN", bool(false)],
  auditFailClosed: ["RELAY_SHELL_AUDIT_FAIL_CLOSED", bool(true)],
  // seccomp: accepted, not implemented
  seccompNotify: ["RELAY_SHELL_SECCOMP_NOTIFY", bool(false)],
  seccompNotifyCap: ["RELAY_SHELL_SECCOMP_NOTIFY_CAP", int(256, 1, 65536)],
  // ssh
  sshConfig: ["RELAY_SHELL_SSH_CONFIG", path((ctx) => join(ctx.home, ".ssh", "config"))],
  inventory: ["RELAY_SHELL_INVENTORY", path(() => "")],
  sshKnownHosts: [
    "RELAY_SHELL_SSH_KNOWN_HOSTS",
    (env) => enumSetting(env, ["strict", "accept-new", "ignore"], "accept-new"),
  ],
  sshKnownHostsFile: ["RELAY_SHELL_SSH_KNOWN_HOSTS_FILE", path((ctx) => join(ctx.stateDir, "known_hosts"))],
  sshConnectTimeout: ["RELAY_SHELL_SSH_CONNECT_TIMEOUT", int(10, 1, 120)],
  sshKeepalive: ["RELAY_SHELL_SSH_KEEPALIVE", int(30, 0, 600)],
  sshIdleTimeout: ["RELAY_SHELL_SSH_IDLE_TIMEOUT", int(1800, 0, 86400)],
  sshAllowWeakerKnownHosts: ["RELAY_SHELL_SSH_ALLOW_WEAKER_KNOWN_HOSTS", bool(false)],
  forwardBindAny: ["RELAY_SHELL_FORWARD_BIND_ANY", bool(false)],
  // bounds of one SFTP transfer whatever its timeout (docs/ssh.md, ADR 0015)
  transferMaxBytes: ["RELAY_SHELL_TRANSFER_MAX_BYTES", int(4294967296, 1024, 2 ** 50)],
  transferMaxEntries: ["RELAY_SHELL_TRANSFER_MAX_ENTRIES", int(100000, 1, 10000000)],
  // oauth
  authEnabled: ["RELAY_SHELL_AUTH_ENABLED", bool(false)],
  authIssuer: ["RELAY_SHELL_AUTH_ISSUER", (env) => urlSetting(env, "https://localhost:8080")],
  authStateDir: ["RELAY_SHELL_AUTH_STATE_DIR", path((ctx) => join(ctx.stateDir, "oauth"))],
  authSingleClient: ["RELAY_SHELL_AUTH_SINGLE_CLIENT", bool(true)],
  authAccessTtl: ["RELAY_SHELL_AUTH_ACCESS_TTL", int(3600, 60, 86400)],
  authRefreshTtl: ["RELAY_SHELL_AUTH_REFRESH_TTL", int(2592000, 300, 7776000)],
  authCodeTtl: ["RELAY_SHELL_AUTH_CODE_TTL", int(300, 30, 3600)],
  // the INFRA-1 broker's socket; the infra_* tools exist only when it is set (docs/tools.md)
  infraSocket: ["RELAY_SHELL_INFRA_SOCKET", socketPathSetting],
  // transactional consent (docs/consent.md); an unknown lease mode is the strictest, never an error
  consent: ["RELAY_SHELL_CONSENT", bool(false)],
  consentAllowedSigners: ["RELAY_SHELL_CONSENT_ALLOWED_SIGNERS", path(() => "")],
  consentDb: ["RELAY_SHELL_CONSENT_DB", path((ctx) => join(ctx.stateDir, "consent.db"))],
  consentWait: ["RELAY_SHELL_CONSENT_WAIT", int(0, 0, 3600)],
  consentLeaseMode: [LEASE_MODE.env, () => lenientEnumSetting(LEASE_MODE)],
  consentLeaseTtl: ["RELAY_SHELL_CONSENT_LEASE_TTL", int(90, 1, 86400)],
  consentLeaseBudget: ["RELAY_SHELL_CONSENT_LEASE_BUDGET", int(20, 1, 100000)],
  consentSessionIdle: ["RELAY_SHELL_CONSENT_SESSION_IDLE", int(28800, 60, 604800)],
  consentApprovalTtl: ["RELAY_SHELL_CONSENT_APPROVAL_TTL", int(300, 10, 86400)],
  // the operator console (docs/console.md); the origin's "" means http://localhost:<the console's port>
  console: ["RELAY_SHELL_CONSOLE", bool(false)],
  consolePort: ["RELAY_SHELL_CONSOLE_PORT", int(8765, 1, 65535)],
  consolePasskeys: ["RELAY_SHELL_CONSOLE_PASSKEYS", path(() => "")],
  consoleRpId: ["RELAY_SHELL_CONSOLE_RP_ID", (env) => hostSetting(env, "localhost")],
  consoleOrigin: ["RELAY_SHELL_CONSOLE_ORIGIN", (env) => originSetting(env, "")],
  consoleSessionTtl: ["RELAY_SHELL_CONSOLE_SESSION_TTL", int(900, 60, 86400)],
  consoleStateDir: ["RELAY_SHELL_CONSOLE_STATE_DIR", path((ctx) => join(ctx.stateDir, "console"))],
  // shared state of several relays (docs/scaling.md); the URL's password is never shown
  stateUrl: ["RELAY_SHELL_STATE_URL", (env) => stateUrlSetting(env)],
  instance: ["RELAY_SHELL_INSTANCE", (env) => instanceSetting(env)],
  // diagnostics
  traceFile: ["RELAY_SHELL_TRACE_FILE", path(() => "")],
};

const FIELDS = Object.keys(TABLE) as (keyof Settings)[];

/** Settings field → its variable name, in declaration order. */
export const SETTING_ENV_NAMES: Readonly<Record<keyof Settings, string>> = Object.freeze(
  Object.fromEntries(FIELDS.map((field) => [field, TABLE[field][0]])) as Record<keyof Settings, string>,
);

/** Raw text per field, as gathered from the environment and `.env`. */
export type RawSettings = { [K in keyof Settings]?: RawValue };

type CrossRule = (s: Partial<Record<keyof Settings, unknown>>) => string | null;

// A field that failed its own check arrives as an abort marker, not its
// type, so each rule checks the types before comparing.
const CROSS_RULES: readonly CrossRule[] = [
  (s) =>
    s.auditChain === true && typeof s.auditFormat === "string" && s.auditFormat !== "jsonl"
      ? `RELAY_SHELL_AUDIT_CHAIN: audit_chain=true requires audit_format=jsonl (RELAY_SHELL_AUDIT_FORMAT is "${s.auditFormat}")`
      : null,
  (s) =>
    s.confirmRollback === true && s.confirmTier3 === false
      ? "RELAY_SHELL_CONFIRM_ROLLBACK: true requires RELAY_SHELL_CONFIRM_TIER3=true (rollback/verify pairing is part of the Tier-3 confirmation flow)"
      : null,
  (s) =>
    typeof s.maxOutput === "number" && typeof s.maxOutputHard === "number" && s.maxOutput > s.maxOutputHard
      ? `RELAY_SHELL_MAX_OUTPUT: ${s.maxOutput} exceeds RELAY_SHELL_MAX_OUTPUT_HARD (${s.maxOutputHard}); expected at most the hard cap`
      : null,
  (s) =>
    typeof s.defaultTimeout === "number" &&
    typeof s.maxTimeout === "number" &&
    s.defaultTimeout > s.maxTimeout
      ? `RELAY_SHELL_DEFAULT_TIMEOUT: ${s.defaultTimeout} exceeds RELAY_SHELL_MAX_TIMEOUT (${s.maxTimeout}); expected at most the maximum timeout`
      : null,
  (s) =>
    s.console === true && s.consolePasskeys === ""
      ? "RELAY_SHELL_CONSOLE_PASSKEYS: RELAY_SHELL_CONSOLE=true requires the operator's passkeys file"
      : null,
];

/** The one schema: raw text per field in, typed Settings out, every problem as a ready message. */
export function createSettingsSchema(ctx: PathContext): z.ZodType<Settings, RawSettings> {
  const shape = Object.fromEntries(
    FIELDS.map((field) => {
      const [env, build] = TABLE[field] as SettingEntry<unknown>;
      return [field, build(env, ctx)];
    }),
  );
  return z.object(shape).superRefine(
    (values, refine) => {
      for (const rule of CROSS_RULES) {
        const message = rule(values);
        if (message) refine.addIssue({ code: "custom", message });
      }
    },
    { when: () => true },
  ) as unknown as z.ZodType<Settings, RawSettings>;
}
