import { chmodSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { settingsHarness } from "../../test/helpers/settings.js";
import { describeSettings } from "./describe.js";
import { loadSettings, snapshotEnvironment } from "./load.js";

const { workdir, opts, problems, cleanup } = settingsHarness("relay-config-");
afterAll(cleanup);

const HOME = "/home/op";

describe("defaults", () => {
  it("pins every default (a change here is a visible diff)", () => {
    expect(loadSettings({}, opts())).toEqual({
      transport: "stdio",
      httpHost: "127.0.0.1",
      httpPort: 8080,
      httpPath: "/mcp",
      allowUnauthNetwork: false,
      maxOutput: 65536,
      maxOutputHard: 1048576,
      defaultTimeout: 60,
      maxTimeout: 900,
      maxSessions: 64,
      maxForwards: 64,
      maxConns: 256,
      sessionIdleTimeout: 1800,
      sessionLifetime: 43200,
      sessionBufferBytes: 262144,
      sessionRecordDir: "",
      sessionRecordInput: false,
      maxInput: 1048576,
      terminalOutput: "safe",
      policyMode: "open",
      policyDeny: null,
      policyAllow: null,
      policyFile: "",
      unsafeNotices: true,
      policyExplainPatterns: false,
      confirmTier3: false,
      confirmTtl: 120,
      confirmRollback: false,
      auditPath: "/home/op/.local/state/relay-shell/audit.jsonl",
      auditStderr: false,
      auditFormat: "jsonl",
      auditChain: false,
      auditFailClosed: true,
      seccompNotify: false,
      seccompNotifyCap: 256,
      sshConfig: "/home/op/.ssh/config",
      inventory: "",
      sshKnownHosts: "accept-new",
      sshKnownHostsFile: "/home/op/.local/state/relay-shell/known_hosts",
      sshConnectTimeout: 10,
      sshKeepalive: 30,
      sshIdleTimeout: 1800,
      sshAllowWeakerKnownHosts: false,
      forwardBindAny: false,
      transferMaxBytes: 4294967296,
      transferMaxEntries: 100000,
      authEnabled: false,
      authIssuer: "https://localhost:8080",
      authStateDir: "/home/op/.local/state/relay-shell/oauth",
      authSingleClient: true,
      authAccessTtl: 3600,
      authRefreshTtl: 2592000,
      authCodeTtl: 300,
      infraSocket: "",
      consent: false,
      consentAllowedSigners: "",
      consentDb: "/home/op/.local/state/relay-shell/consent.db",
      consentWait: 0,
      consentLeaseMode: "manual",
      consentLeaseTtl: 90,
      consentLeaseBudget: 20,
      consentSessionIdle: 28800,
      consentApprovalTtl: 300,
      console: false,
      consolePort: 8765,
      consolePasskeys: "",
      consoleRpId: "localhost",
      consoleOrigin: "",
      consoleSessionTtl: 900,
      consoleStateDir: "/home/op/.local/state/relay-shell/console",
      traceFile: "",
      stateUrl: "",
      instance: "",
    });
  });

  it("puts the state defaults under XDG_STATE_HOME when it is absolute", () => {
    const fromEnv = loadSettings({ XDG_STATE_HOME: "/srv/state" }, { cwd: workdir(), homeDir: HOME });
    expect(fromEnv.auditPath).toBe("/srv/state/relay-shell/audit.jsonl");
    expect(fromEnv.authStateDir).toBe("/srv/state/relay-shell/oauth");
    expect(fromEnv.sshKnownHostsFile).toBe("/srv/state/relay-shell/known_hosts");
    expect(loadSettings({}, opts({ xdgStateHome: "/x" })).auditPath).toBe("/x/relay-shell/audit.jsonl");
    const relative = loadSettings({ XDG_STATE_HOME: "state" }, { cwd: workdir(), homeDir: HOME });
    expect(relative.auditPath).toBe("/home/op/.local/state/relay-shell/audit.jsonl");
  });

  it("takes the home directory from HOME in the given environment", () => {
    const s = loadSettings({ HOME: "/home/other" }, { cwd: workdir(), xdgStateHome: "" });
    expect(s.sshConfig).toBe("/home/other/.ssh/config");
  });

  it("returns a frozen object", () => {
    const s = loadSettings({}, opts());
    expect(Object.isFrozen(s)).toBe(true);
  });
});

describe("cross-field rules", () => {
  it("audit chain needs the jsonl format", () => {
    expect(problems({ RELAY_SHELL_AUDIT_CHAIN: "true", RELAY_SHELL_AUDIT_FORMAT: "cef" })).toEqual([
      'RELAY_SHELL_AUDIT_CHAIN: audit_chain=true requires audit_format=jsonl (RELAY_SHELL_AUDIT_FORMAT is "cef")',
    ]);
    expect(loadSettings({ RELAY_SHELL_AUDIT_CHAIN: "true" }, opts()).auditChain).toBe(true);
  });

  it("with consent on, refuses a .env the relay's own account could rewrite, and reads one it cannot", () => {
    const cwd = workdir("RELAY_SHELL_CONSENT_LEASE_BUDGET=500\n");
    const env = {
      RELAY_SHELL_CONSENT: "true",
      RELAY_SHELL_CONSENT_ALLOWED_SIGNERS: "/etc/relay-shell/allowed_signers",
    };
    const lines = problems(env, opts({ cwd }));
    expect(lines.join("\n")).toContain(
      `RELAY_SHELL_CONSENT is on and settings are read from ${join(cwd, ".env")}, which the relay's own account can write or replace`,
    );
    // Consent off: the file is read as before.
    expect(loadSettings({}, opts({ cwd })).consentLeaseBudget).toBe(500);
    if (process.geteuid?.() === 0) return; // root may write every file; the rest needs another account
    chmodSync(join(cwd, ".env"), 0o444);
    chmodSync(cwd, 0o555);
    try {
      expect(loadSettings(env, opts({ cwd })).consentLeaseBudget).toBe(500);
    } finally {
      chmodSync(cwd, 0o755);
    }
  });

  it("rollback pairing needs the Tier-3 broker", () => {
    expect(problems({ RELAY_SHELL_CONFIRM_ROLLBACK: "true" })).toEqual([
      "RELAY_SHELL_CONFIRM_ROLLBACK: true requires RELAY_SHELL_CONFIRM_TIER3=true (rollback/verify pairing is part of the Tier-3 confirmation flow)",
    ]);
    const s = loadSettings(
      { RELAY_SHELL_CONFIRM_ROLLBACK: "true", RELAY_SHELL_CONFIRM_TIER3: "true" },
      opts(),
    );
    expect(s.confirmRollback).toBe(true);
  });

  it("a shared state names its relay, and its URL's password is never shown", () => {
    const url = "postgres://relay:s3cret@db.internal:5432/relay";
    expect(problems({ RELAY_SHELL_STATE_URL: url })).toEqual([
      expect.stringMatching(/^RELAY_SHELL_STATE_URL is set, .*RELAY_SHELL_INSTANCE must name this one/),
    ]);
    const s = loadSettings({ RELAY_SHELL_STATE_URL: url, RELAY_SHELL_INSTANCE: "relay-2" }, opts());
    expect([s.stateUrl, s.instance]).toEqual([url, "relay-2"]);
    expect(describeSettings(s).RELAY_SHELL_STATE_URL).toBe("postgres://relay:***@db.internal:5432/relay");
    const bad = problems({
      RELAY_SHELL_STATE_URL: "mysql://relay:s3cret@db/relay",
      RELAY_SHELL_INSTANCE: "a",
    });
    expect(bad).toEqual([
      'RELAY_SHELL_STATE_URL: expected a postgres:// or postgresql:// URL with a host (or empty for the embedded state), got "mysql://relay:***@db/relay"',
    ]);
    expect(bad.join("\n")).not.toContain("s3cret");
    for (const name of ["Relay", "-a", "a-", "a_b", "x".repeat(33)]) {
      expect(problems({ RELAY_SHELL_INSTANCE: name })[0], name).toMatch(
        /^RELAY_SHELL_INSTANCE: expected 1-32/,
      );
    }
    expect(loadSettings({ RELAY_SHELL_INSTANCE: "r1" }, opts()).stateUrl).toBe("");
  });

  it("the console needs the operator's passkeys file", () => {
    expect(problems({ RELAY_SHELL_CONSOLE: "true" })).toEqual([
      "RELAY_SHELL_CONSOLE_PASSKEYS: RELAY_SHELL_CONSOLE=true requires the operator's passkeys file",
    ]);
    const s = loadSettings({ RELAY_SHELL_CONSOLE: "true", RELAY_SHELL_CONSOLE_PASSKEYS: "/etc/pk" }, opts());
    expect(s.consolePasskeys).toBe("/etc/pk");
  });

  it("the console's origin is an origin: scheme, host and port only", () => {
    expect(
      loadSettings({ RELAY_SHELL_CONSOLE_ORIGIN: "https://Relay.Example.com:443/" }, opts()).consoleOrigin,
    ).toBe("https://relay.example.com");
    for (const bad of [
      "https://relay.example.com/console",
      "ftp://x",
      "https://u:p@x",
      "https://x/?a",
      "x",
    ]) {
      expect(problems({ RELAY_SHELL_CONSOLE_ORIGIN: bad })).toEqual([
        `RELAY_SHELL_CONSOLE_ORIGIN: expected an http:// or https:// origin (scheme, host and port only), got ${JSON.stringify(bad)}`,
      ]);
    }
  });

  it("a budget may not exceed its cap", () => {
    expect(problems({ RELAY_SHELL_MAX_OUTPUT: "8192", RELAY_SHELL_MAX_OUTPUT_HARD: "4096" })).toEqual([
      "RELAY_SHELL_MAX_OUTPUT: 8192 exceeds RELAY_SHELL_MAX_OUTPUT_HARD (4096); expected at most the hard cap",
    ]);
    expect(problems({ RELAY_SHELL_DEFAULT_TIMEOUT: "901" })).toEqual([
      "RELAY_SHELL_DEFAULT_TIMEOUT: 901 exceeds RELAY_SHELL_MAX_TIMEOUT (900); expected at most the maximum timeout",
    ]);
    expect(
      loadSettings({ RELAY_SHELL_MAX_OUTPUT: "4096", RELAY_SHELL_MAX_OUTPUT_HARD: "4096" }, opts()).maxOutput,
    ).toBe(4096);
  });

  it("reports every problem at once, field errors and cross-field rules together", () => {
    expect(
      problems({
        RELAY_SHELL_HTTP_PORT: "http",
        RELAY_SHELL_MAX_TIMEOUT: "5m",
        RELAY_SHELL_POLICY_DENY: "(",
        RELAY_SHELL_AUDIT_CHAIN: "on",
        RELAY_SHELL_AUDIT_FORMAT: "leef",
        RELAY_SHELL_CONFIRM_ROLLBACK: "yes",
      }),
    ).toEqual([
      'RELAY_SHELL_HTTP_PORT: expected integer 1..65535, got "http"',
      'RELAY_SHELL_MAX_TIMEOUT: expected integer 1..86400, got "5m"',
      'RELAY_SHELL_POLICY_DENY: expected a JavaScript regular expression (flags "iu"), got "(": Invalid regular expression: /(/iu: Unterminated group',
      'RELAY_SHELL_AUDIT_CHAIN: audit_chain=true requires audit_format=jsonl (RELAY_SHELL_AUDIT_FORMAT is "leef")',
      "RELAY_SHELL_CONFIRM_ROLLBACK: true requires RELAY_SHELL_CONFIRM_TIER3=true (rollback/verify pairing is part of the Tier-3 confirmation flow)",
    ]);
  });

  it("does not judge a cross-field rule on a value that failed its own check", () => {
    expect(
      problems({
        RELAY_SHELL_MAX_OUTPUT_HARD: "lots",
        RELAY_SHELL_CONFIRM_TIER3: "perhaps",
        RELAY_SHELL_CONFIRM_ROLLBACK: "1",
      }),
    ).toEqual([
      'RELAY_SHELL_MAX_OUTPUT_HARD: expected integer 4096..134217728, got "lots"',
      'RELAY_SHELL_CONFIRM_TIER3: expected boolean (true/false, 1/0, yes/no, on/off), got "perhaps"',
    ]);
  });
});

describe("snapshotEnvironment", () => {
  it("is a frozen copy of the process environment", () => {
    const snapshot = snapshotEnvironment();
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(snapshot.PATH).toBe(process.env.PATH);
    expect(snapshot).not.toBe(process.env);
  });
});
