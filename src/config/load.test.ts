import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, type LoadOptions, loadSettings, snapshotEnvironment } from "./load.js";

const root = mkdtempSync(join(tmpdir(), "relay-config-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dirCount = 0;
/** A fresh working directory, optionally with a .env file. */
function workdir(envFile?: string): string {
  const dir = join(root, `cwd-${dirCount++}`);
  mkdirSync(dir);
  if (envFile !== undefined) writeFileSync(join(dir, ".env"), envFile);
  return dir;
}

const HOME = "/home/op";
const opts = (over: LoadOptions = {}): LoadOptions => ({
  cwd: workdir(),
  homeDir: HOME,
  xdgStateHome: "",
  ...over,
});

/** The ConfigError lines for an environment (fails the test when it loads). */
function problems(env: Record<string, string>, options: LoadOptions = opts()): string[] {
  try {
    loadSettings(env, options);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message.split("\n");
  }
  throw new Error("expected a ConfigError");
}

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
      unsafeNotices: true,
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
      traceFile: "",
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

describe("value syntax", () => {
  it("matches names case-insensitively", () => {
    const s = loadSettings({ relay_shell_max_output: "2048", Relay_Shell_Policy_Mode: "guarded" }, opts());
    expect(s.maxOutput).toBe(2048);
    expect(s.policyMode).toBe("guarded");
  });

  it("refuses two spellings of one name with different values", () => {
    expect(problems({ RELAY_SHELL_MAX_OUTPUT: "2048", relay_shell_max_output: "4096" })).toEqual([
      "RELAY_SHELL_MAX_OUTPUT: set more than once with different values (RELAY_SHELL_MAX_OUTPUT, relay_shell_max_output)",
    ]);
    expect(
      loadSettings({ RELAY_SHELL_MAX_OUTPUT: "2048", relay_shell_max_output: "2048" }, opts()).maxOutput,
    ).toBe(2048);
  });

  it.each([
    ["true", true],
    ["FALSE", false],
    ["1", true],
    ["0", false],
    ["Yes", true],
    ["no", false],
    [" on ", true],
    ["OFF", false],
  ])("boolean %j is %s", (text, value) => {
    expect(loadSettings({ RELAY_SHELL_AUDIT_STDERR: text }, opts()).auditStderr).toBe(value);
  });

  it("refuses other boolean spellings", () => {
    expect(problems({ RELAY_SHELL_AUTH_ENABLED: "maybe" })).toEqual([
      'RELAY_SHELL_AUTH_ENABLED: expected boolean (true/false, 1/0, yes/no, on/off), got "maybe"',
    ]);
    expect(problems({ RELAY_SHELL_AUTH_ENABLED: "" })).toHaveLength(1);
  });

  it("accepts decimal integers only", () => {
    expect(loadSettings({ RELAY_SHELL_MAX_TIMEOUT: " 3600 " }, opts()).maxTimeout).toBe(3600);
    expect(loadSettings({ RELAY_SHELL_SSH_KEEPALIVE: "0" }, opts()).sshKeepalive).toBe(0);
    expect(loadSettings({ RELAY_SHELL_MAX_TIMEOUT: "0900" }, opts()).maxTimeout).toBe(900);
    for (const bad of ["5m", "1e3", "0x10", "", "12.0", "1_000", "ten"]) {
      expect(problems({ RELAY_SHELL_MAX_TIMEOUT: bad })).toEqual([
        `RELAY_SHELL_MAX_TIMEOUT: expected integer 1..86400, got ${JSON.stringify(bad)}`,
      ]);
    }
  });

  it.each([
    ["RELAY_SHELL_HTTP_PORT", "0", "integer 1..65535"],
    ["RELAY_SHELL_HTTP_PORT", "65536", "integer 1..65535"],
    ["RELAY_SHELL_MAX_OUTPUT", "1023", "integer 1024..16777216"],
    ["RELAY_SHELL_MAX_OUTPUT_HARD", "4095", "integer 4096..134217728"],
    ["RELAY_SHELL_DEFAULT_TIMEOUT", "86401", "integer 1..86400"],
    ["RELAY_SHELL_MAX_SESSIONS", "1025", "integer 1..1024"],
    ["RELAY_SHELL_MAX_FORWARDS", "0", "integer 1..1024"],
    ["RELAY_SHELL_SESSION_IDLE_TIMEOUT", "9", "integer 10..86400"],
    ["RELAY_SHELL_SESSION_LIFETIME", "59", "integer 60..604800"],
    ["RELAY_SHELL_SESSION_LIFETIME", "604801", "integer 60..604800"],
    ["RELAY_SHELL_SESSION_BUFFER_BYTES", "16777217", "integer 4096..16777216"],
    ["RELAY_SHELL_MAX_INPUT", "1023", "integer 1024..134217728"],
    ["RELAY_SHELL_MAX_INPUT", "134217729", "integer 1024..134217728"],
    ["RELAY_SHELL_CONFIRM_TTL", "4", "integer 5..3600"],
    ["RELAY_SHELL_SSH_CONNECT_TIMEOUT", "121", "integer 1..120"],
    ["RELAY_SHELL_SSH_KEEPALIVE", "-1", "integer 0..600"],
    ["RELAY_SHELL_SSH_IDLE_TIMEOUT", "86401", "integer 0..86400"],
    ["RELAY_SHELL_TRANSFER_MAX_BYTES", "1023", "integer 1024..1125899906842624"],
    ["RELAY_SHELL_TRANSFER_MAX_BYTES", "1GiB", "integer 1024..1125899906842624"],
    ["RELAY_SHELL_TRANSFER_MAX_ENTRIES", "0", "integer 1..10000000"],
    ["RELAY_SHELL_TRANSFER_MAX_ENTRIES", "10000001", "integer 1..10000000"],
    ["RELAY_SHELL_AUTH_ACCESS_TTL", "59", "integer 60..86400"],
    ["RELAY_SHELL_AUTH_ACCESS_TTL", "86401", "integer 60..86400"],
    ["RELAY_SHELL_AUTH_REFRESH_TTL", "299", "integer 300..7776000"],
    ["RELAY_SHELL_AUTH_REFRESH_TTL", "7776001", "integer 300..7776000"],
    ["RELAY_SHELL_AUTH_CODE_TTL", "29", "integer 30..3600"],
    ["RELAY_SHELL_AUTH_CODE_TTL", "3601", "integer 30..3600"],
  ])("%s=%s is out of range", (name, value, expected) => {
    expect(problems({ [name]: value })).toEqual([`${name}: expected ${expected}, got "${value}"`]);
  });

  it("reads RELAY_SHELL_TERMINAL_OUTPUT and names the modes on a bad value", () => {
    const cwd = workdir();
    for (const mode of ["raw", "safe", "plain"] as const) {
      expect(
        loadSettings({ RELAY_SHELL_TERMINAL_OUTPUT: mode.toUpperCase() }, opts({ cwd })).terminalOutput,
      ).toBe(mode);
    }
    expect(problems({ RELAY_SHELL_TERMINAL_OUTPUT: "strip" })).toEqual([
      'RELAY_SHELL_TERMINAL_OUTPUT: expected one of raw, safe, plain, got "strip"',
    ]);
  });

  it("refuses absurd limits (docs/wire-contract.md §4.3)", () => {
    expect(problems({ RELAY_SHELL_MAX_OUTPUT: String(10 ** 12) })).toEqual([
      'RELAY_SHELL_MAX_OUTPUT: expected integer 1024..16777216, got "1000000000000"',
    ]);
    expect(problems({ RELAY_SHELL_MAX_CONNS: String(10 ** 9) })).toEqual([
      'RELAY_SHELL_MAX_CONNS: expected integer 1..4096, got "1000000000"',
    ]);
    expect(problems({ RELAY_SHELL_SECCOMP_NOTIFY_CAP: "0" })).toEqual([
      'RELAY_SHELL_SECCOMP_NOTIFY_CAP: expected integer 1..65536, got "0"',
    ]);
    expect(problems({ RELAY_SHELL_MAX_OUTPUT_HARD: "9".repeat(400) })[0]).toMatch(
      /^RELAY_SHELL_MAX_OUTPUT_HARD: expected integer 4096\.\.134217728, got "9{200}\.\.\. \(400 characters\)"$/,
    );
  });

  it("accepts exactly the integers of the range (property)", () => {
    const cwd = workdir();
    fc.assert(
      fc.property(fc.integer({ min: -10, max: 5000 }), (n) => {
        const env = { RELAY_SHELL_MAX_CONNS: String(n) };
        if (n >= 1 && n <= 4096) expect(loadSettings(env, opts({ cwd })).maxConns).toBe(n);
        else expect(() => loadSettings(env, opts({ cwd }))).toThrow(ConfigError);
      }),
      { numRuns: 200 },
    );
  });

  it("trims and lower-cases the four enums", () => {
    const s = loadSettings(
      {
        RELAY_SHELL_TRANSPORT: " HTTP ",
        RELAY_SHELL_POLICY_MODE: "ReadOnly",
        RELAY_SHELL_SSH_KNOWN_HOSTS: "STRICT\n",
        RELAY_SHELL_AUDIT_FORMAT: "Leef",
      },
      opts(),
    );
    expect([s.transport, s.policyMode, s.sshKnownHosts, s.auditFormat]).toEqual([
      "http",
      "readonly",
      "strict",
      "leef",
    ]);
  });

  it("lists the accepted values of an enum", () => {
    expect(
      problems({
        RELAY_SHELL_TRANSPORT: "tcp",
        RELAY_SHELL_POLICY_MODE: "closed",
        RELAY_SHELL_SSH_KNOWN_HOSTS: "yes",
        RELAY_SHELL_AUDIT_FORMAT: "",
      }),
    ).toEqual([
      'RELAY_SHELL_TRANSPORT: expected one of stdio, http, got "tcp"',
      'RELAY_SHELL_POLICY_MODE: expected one of open, guarded, readonly, got "closed"',
      'RELAY_SHELL_AUDIT_FORMAT: expected one of jsonl, cef, leef, got ""',
      'RELAY_SHELL_SSH_KNOWN_HOSTS: expected one of strict, accept-new, ignore, got "yes"',
    ]);
  });

  it("checks the HTTP path, host and issuer", () => {
    expect(loadSettings({ RELAY_SHELL_HTTP_PATH: "/relay/mcp" }, opts()).httpPath).toBe("/relay/mcp");
    expect(
      problems({
        RELAY_SHELL_HTTP_PATH: "mcp",
        RELAY_SHELL_HTTP_HOST: "",
        RELAY_SHELL_AUTH_ISSUER: "ftp://x",
      }),
    ).toEqual([
      'RELAY_SHELL_HTTP_HOST: expected a host name or IP address to bind, got ""',
      'RELAY_SHELL_HTTP_PATH: expected a URL path starting with "/" (no blanks, "?" or "#"), got "mcp"',
      'RELAY_SHELL_AUTH_ISSUER: expected an http:// or https:// URL without query or fragment, got "ftp://x"',
    ]);
    expect(problems({ RELAY_SHELL_AUTH_ISSUER: "https://auth.example/?q=1" })).toHaveLength(1);
    expect(loadSettings({ RELAY_SHELL_HTTP_HOST: "[::1]" }, opts()).httpHost).toBe("[::1]");
  });

  it("shows control characters escaped, so each problem stays on one line", () => {
    const lines = problems({ RELAY_SHELL_HTTP_PORT: "80\n81" });
    expect(lines).toEqual(['RELAY_SHELL_HTTP_PORT: expected integer 1..65535, got "80\\n81"']);
  });
});

describe("paths", () => {
  it("expands ~ in every path setting and resolves relative paths against cwd", () => {
    const cwd = workdir();
    const s = loadSettings(
      {
        RELAY_SHELL_AUDIT_PATH: "~/logs/audit.jsonl",
        RELAY_SHELL_SSH_CONFIG: "~",
        RELAY_SHELL_INVENTORY: "inv/hosts.json",
        RELAY_SHELL_AUTH_STATE_DIR: "~/oauth",
        RELAY_SHELL_SESSION_RECORD_DIR: "./rec/../records",
        RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: "~/.ssh/relay_known_hosts",
      },
      opts({ cwd }),
    );
    expect(s.auditPath).toBe("/home/op/logs/audit.jsonl");
    expect(s.sshConfig).toBe("/home/op");
    expect(s.inventory).toBe(join(cwd, "inv/hosts.json"));
    expect(s.authStateDir).toBe("/home/op/oauth");
    expect(s.sessionRecordDir).toBe(join(cwd, "records"));
    expect(s.sshKnownHostsFile).toBe("/home/op/.ssh/relay_known_hosts");
  });

  it("treats an empty or blank path as unset", () => {
    const s = loadSettings({ RELAY_SHELL_AUDIT_PATH: "", RELAY_SHELL_INVENTORY: "  " }, opts());
    expect(s.auditPath).toBe("/home/op/.local/state/relay-shell/audit.jsonl");
    expect(s.inventory).toBe("");
  });

  it("refuses ~user paths", () => {
    expect(problems({ RELAY_SHELL_INVENTORY: "~bob/hosts.json" })).toEqual([
      'RELAY_SHELL_INVENTORY: expected a file path, got "~bob/hosts.json": the ~user form is not supported, write the path out',
    ]);
  });
});

describe("policy regexes", () => {
  it("compiles them case-insensitive with the u flag; empty means no list", () => {
    const s = loadSettings(
      { RELAY_SHELL_POLICY_DENY: String.raw`rm\s+-rf`, RELAY_SHELL_POLICY_ALLOW: "" },
      opts(),
    );
    expect(s.policyDeny?.flags).toBe("iu");
    expect(s.policyDeny?.test("shell_exec RM  -RF /")).toBe(true);
    expect(s.policyAllow).toBeNull();
  });

  it("reports the engine's message for an invalid regex", () => {
    expect(problems({ RELAY_SHELL_POLICY_ALLOW: "a(" })).toEqual([
      'RELAY_SHELL_POLICY_ALLOW: expected a JavaScript regular expression (flags "iu"), got "a(": Invalid regular expression: /a(/iu: Unterminated group',
    ]);
  });

  it("names Python-only syntax", () => {
    const [line] = problems({ RELAY_SHELL_POLICY_DENY: "(?P<cmd>rm)" });
    expect(line).toBe(
      'RELAY_SHELL_POLICY_DENY: expected a JavaScript regular expression (flags "iu"), got "(?P<cmd>rm)": (?P<name>...) is Python syntax; write (?<name>...)',
    );
  });
});

describe("cross-field rules", () => {
  it("audit chain needs the jsonl format", () => {
    expect(problems({ RELAY_SHELL_AUDIT_CHAIN: "true", RELAY_SHELL_AUDIT_FORMAT: "cef" })).toEqual([
      'RELAY_SHELL_AUDIT_CHAIN: audit_chain=true requires audit_format=jsonl (RELAY_SHELL_AUDIT_FORMAT is "cef")',
    ]);
    expect(loadSettings({ RELAY_SHELL_AUDIT_CHAIN: "true" }, opts()).auditChain).toBe(true);
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
