import { describe, expect, it } from "vitest";
import { loadSettings } from "./load.js";
import type { Settings } from "./types.js";
import { checkBindSafety, configWarnings } from "./warnings.js";

const defaults = loadSettings({}, { cwd: "/nonexistent-relay-cwd", homeDir: "/home/op", xdgStateHome: "" });
const settings = (over: Partial<Settings> = {}): Settings => ({ ...defaults, ...over });
const user = { euid: 1000 };

const OPEN = "policy is open with no deny list and no Tier-3 confirmation: nothing is refused";
const CHAIN = "audit hash chain is off: edits to the audit log are not detectable";

describe("configWarnings", () => {
  it("warns about the default posture", () => {
    expect(configWarnings(defaults, user)).toEqual([
      OPEN,
      "ssh_known_hosts=accept-new: SSH host keys are not strictly verified",
      CHAIN,
    ]);
  });

  it("is empty for a locked-down configuration", () => {
    const strict = settings({ policyMode: "guarded", sshKnownHosts: "strict", auditChain: true });
    expect(configWarnings(strict, user)).toEqual([]);
  });

  it("warns when host output reaches clients raw", () => {
    expect(configWarnings(settings({ terminalOutput: "raw" }), user)).toContain(
      "terminal output is raw (RELAY_SHELL_TERMINAL_OUTPUT=raw): host output can drive the client's terminal",
    );
    expect(configWarnings(settings({ terminalOutput: "plain" }), user)).toEqual(
      configWarnings(defaults, user),
    );
  });

  it("warns on weak consent settings, and only with consent on", () => {
    const strict = { policyMode: "guarded", sshKnownHosts: "strict", auditChain: true } as const;
    const weak = {
      consentLeaseMode: "session",
      consentLeaseTtl: 3600,
      consentLeaseBudget: 500,
      consentApprovalTtl: 3600,
      consentWait: 1200,
    } as const;
    expect(configWarnings(settings({ ...strict, ...weak }), user)).toEqual([]);
    expect(configWarnings(settings({ ...strict, consent: true }), user)).toEqual([]);
    expect(configWarnings(settings({ ...strict, ...weak, consent: true }), user)).toEqual([
      "consent lease mode is session: one signed read covers up to 500 reads for the whole MCP session",
      "consent read lease lasts 3600s (RELAY_SHELL_CONSENT_LEASE_TTL)",
      "consent read lease allows 500 reads (RELAY_SHELL_CONSENT_LEASE_BUDGET)",
      "consent approvals stay usable for 3600s (RELAY_SHELL_CONSENT_APPROVAL_TTL)",
      "a call may wait 1200s for consent (RELAY_SHELL_CONSENT_WAIT)",
    ]);
    // In manual mode the lease settings are not used, so they are not a weakness.
    const manual = { ...weak, consentLeaseMode: "manual", consentApprovalTtl: 300, consentWait: 0 } as const;
    expect(configWarnings(settings({ ...strict, ...manual, consent: true }), user)).toEqual([]);
  });

  it("names a lease mode it read as manual because it names no mode, consent on or off", () => {
    const load = (mode: string) =>
      loadSettings(
        { RELAY_SHELL_CONSENT_LEASE_MODE: mode },
        { cwd: "/nonexistent-relay-cwd", homeDir: "/home/op", xdgStateHome: "" },
      );
    const misread = load("windw");
    expect(misread.consentLeaseMode).toBe("manual");
    const warning =
      'RELAY_SHELL_CONSENT_LEASE_MODE="windw" is none of manual, window, session: manual is used';
    expect(configWarnings(misread, user)).toEqual([...configWarnings(defaults, user), warning]);
    expect(configWarnings(load("always"), user)).toContain(
      'RELAY_SHELL_CONSENT_LEASE_MODE="always" is none of manual, window, session: manual is used',
    );
    // A mode in any case and blanks are read as the docs say: nothing to warn about.
    for (const named of ["manual", "window", "WINDOW", " Session ", "", "  "]) {
      expect(configWarnings(load(named), user), named).toEqual(configWarnings(defaults, user));
    }
  });

  it("warns when running as root", () => {
    expect(configWarnings(settings(), { euid: 0 })[0]).toBe(
      "running as root: every command runs with full host privileges",
    );
  });

  it("drops the open-policy warning when a deny list or the broker exists", () => {
    expect(configWarnings(settings({ policyDeny: /x/iu }), user)).not.toContain(OPEN);
    expect(configWarnings(settings({ confirmTier3: true }), user)).not.toContain(OPEN);
    expect(configWarnings(settings({ policyMode: "readonly" }), user)).not.toContain(OPEN);
    // With consent on, the open policy refuses nothing, but the calls are held: the warning says so.
    const held = configWarnings(settings({ consent: true }), user);
    expect(held).not.toContain(OPEN);
    expect(held.join("\n")).toContain(
      "but human consent holds every call that is not a proven read (Tier 0)",
    );
  });

  it("names the weak host-key mode", () => {
    expect(configWarnings(settings({ sshKnownHosts: "ignore" }), user)).toContain(
      "ssh_known_hosts=ignore: SSH host keys are not strictly verified",
    );
  });

  it("covers the permissive opt-ins", () => {
    const all = settings({
      sshKnownHosts: "strict",
      auditChain: true,
      confirmTier3: true,
      sshAllowWeakerKnownHosts: true,
      transport: "http",
      httpHost: "0.0.0.0",
      allowUnauthNetwork: true,
      seccompNotify: true,
      forwardBindAny: true,
    });
    expect(configWarnings(all, user)).toEqual([
      "per-call known_hosts may weaken host-key checking below the server default",
      "HTTP transport without OAuth: anyone who can reach the listener can run commands",
      "seccomp syscall audit channel is not implemented; RELAY_SHELL_SECCOMP_NOTIFY has no effect",
      "forwards may listen on every interface (RELAY_SHELL_FORWARD_BIND_ANY=true)",
      "unauthenticated HTTP listener on a non-loopback address (RELAY_SHELL_ALLOW_UNAUTH_NETWORK=true)",
    ]);
  });

  it("does not warn about the network bind on loopback or with OAuth", () => {
    const loopback = configWarnings(settings({ transport: "http", allowUnauthNetwork: true }), user);
    expect(loopback.some((w) => w.startsWith("unauthenticated HTTP listener"))).toBe(false);
    const oauth = configWarnings(
      settings({ transport: "http", httpHost: "0.0.0.0", authEnabled: true, allowUnauthNetwork: true }),
      user,
    );
    expect(oauth.some((w) => w.includes("OAuth") || w.startsWith("unauthenticated"))).toBe(false);
  });
});

describe("checkBindSafety", () => {
  it("refuses an unauthenticated non-loopback HTTP bind, naming both settings", () => {
    const message = checkBindSafety(settings({ transport: "http", httpHost: "0.0.0.0" }));
    expect(message).toContain("0.0.0.0:8080");
    expect(message).toContain("RELAY_SHELL_ALLOW_UNAUTH_NETWORK");
    expect(message).toContain("RELAY_SHELL_AUTH_ENABLED");
    expect(checkBindSafety(settings({ transport: "http", httpHost: "::", httpPort: 9000 }))).toContain(
      "[::]:9000",
    );
  });

  it.each<[string, Partial<Settings>]>([
    ["stdio", { httpHost: "0.0.0.0" }],
    ["loopback", { transport: "http" }],
    ["OAuth on", { transport: "http", httpHost: "0.0.0.0", authEnabled: true }],
    ["explicitly allowed", { transport: "http", httpHost: "0.0.0.0", allowUnauthNetwork: true }],
  ])("accepts %s", (_, over) => {
    expect(checkBindSafety(settings(over))).toBeNull();
  });
});
