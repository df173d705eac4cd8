import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { settingsHarness } from "../../test/helpers/settings.js";
import { ConfigError, loadSettings } from "./load.js";

// The value syntax of every setting (values.ts), seen through loadSettings.
const { workdir, opts, problems, cleanup } = settingsHarness("relay-config-values-");
afterAll(cleanup);

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
        RELAY_SHELL_POLICY_FILE: "~/relay/policy.toml",
      },
      opts({ cwd }),
    );
    expect(s.auditPath).toBe("/home/op/logs/audit.jsonl");
    expect(s.sshConfig).toBe("/home/op");
    expect(s.inventory).toBe(join(cwd, "inv/hosts.json"));
    expect(s.authStateDir).toBe("/home/op/oauth");
    expect(s.sessionRecordDir).toBe(join(cwd, "records"));
    expect(s.sshKnownHostsFile).toBe("/home/op/.ssh/relay_known_hosts");
    expect(s.policyFile).toBe("/home/op/relay/policy.toml");
  });

  it("treats an empty or blank path as unset", () => {
    const s = loadSettings(
      { RELAY_SHELL_AUDIT_PATH: "", RELAY_SHELL_INVENTORY: "  ", RELAY_SHELL_POLICY_FILE: " " },
      opts(),
    );
    expect(s.auditPath).toBe("/home/op/.local/state/relay-shell/audit.jsonl");
    expect(s.inventory).toBe("");
    expect(s.policyFile).toBe("");
  });

  it("takes the broker socket as a path and refuses one the kernel could not address", () => {
    const cwd = workdir();
    expect(loadSettings({ RELAY_SHELL_INFRA_SOCKET: "run/infra.sock" }, opts({ cwd })).infraSocket).toBe(
      join(cwd, "run/infra.sock"),
    );
    expect(loadSettings({ RELAY_SHELL_INFRA_SOCKET: " " }, opts()).infraSocket).toBe("");
    const fits = `/${"s".repeat(106)}`;
    expect(loadSettings({ RELAY_SHELL_INFRA_SOCKET: fits }, opts()).infraSocket).toBe(fits);
    // One byte more would be cut by the kernel to a name that may be another socket.
    expect(problems({ RELAY_SHELL_INFRA_SOCKET: `${fits}s` })).toEqual([
      `RELAY_SHELL_INFRA_SOCKET: expected a Unix socket path of at most 107 bytes, got "${fits}s": it resolves to 108 bytes`,
    ]);
    expect(problems({ RELAY_SHELL_INFRA_SOCKET: "/run/é".padEnd(107, "x") })).toHaveLength(1);
  });

  it("reads an unknown or blank consent lease mode as manual, the strictest", () => {
    const mode = (raw: string | undefined) =>
      loadSettings(raw === undefined ? {} : { RELAY_SHELL_CONSENT_LEASE_MODE: raw }, opts()).consentLeaseMode;
    expect(mode(undefined)).toBe("manual");
    expect(mode("window")).toBe("window");
    // Trimmed and in any case, like every enumerated setting (docs/configuration.md).
    expect(mode("WINDOW")).toBe("window");
    expect(mode(" Session ")).toBe("session");
    expect(mode("windw")).toBe("manual");
    expect(mode("")).toBe("manual");
    expect(mode("always")).toBe("manual");
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
