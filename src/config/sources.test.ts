import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { settingsHarness } from "../../test/helpers/settings.js";
import { describeSettings } from "./describe.js";
import { loadSettings, loadSettingsReport } from "./load.js";

const { workdir, opts, problems, cleanup } = settingsHarness("relay-config-sources-");
afterAll(cleanup);

describe(".env file", () => {
  it("loads settings from .env in cwd, with the process environment winning", () => {
    const cwd = workdir(
      [
        "# relay settings",
        "RELAY_SHELL_POLICY_MODE=guarded",
        'export RELAY_SHELL_POLICY_DENY="rm\\s+-rf # not a comment"',
        "relay_shell_max_output = 4096   # comment",
        "RELAY_SHELL_MAX_TIMEOUT=100",
        "RELAY_SHELL_AUDIT_STDERR=true",
        "OTHER_APP_SETTING=whatever",
        "not a setting line for us",
      ].join("\n"),
    );
    const report = loadSettingsReport(
      { RELAY_SHELL_MAX_TIMEOUT: "200", RELAY_SHELL_AUDIT_STDERR: "false" },
      opts({ cwd }),
    );
    expect(report.envFile).toBe(join(cwd, ".env"));
    expect(report.settings.policyMode).toBe("guarded");
    expect(report.settings.policyDeny?.source).toBe(String.raw`rm\s+-rf # not a comment`);
    expect(report.settings.maxOutput).toBe(4096);
    expect(report.settings.maxTimeout).toBe(200);
    expect(report.settings.auditStderr).toBe(false);
  });

  it("an empty process variable still wins over .env", () => {
    const cwd = workdir("RELAY_SHELL_INVENTORY=/etc/relay/inventory.json\n");
    expect(loadSettings({ RELAY_SHELL_INVENTORY: "" }, opts({ cwd })).inventory).toBe("");
    expect(loadSettings({}, opts({ cwd })).inventory).toBe("/etc/relay/inventory.json");
  });

  it("names the file and line of a broken relay setting, and validates .env values like any other", () => {
    const cwd = workdir("RELAY_SHELL_POLICY_DENY='unterminated\nRELAY_SHELL_MAX_CONNS=lots\nOTHER='broken\n");
    expect(problems({}, opts({ cwd }))).toEqual([
      `${join(cwd, ".env")}:1: cannot parse setting: unterminated ' quote`,
      'RELAY_SHELL_MAX_CONNS: expected integer 1..4096, got "lots"',
    ]);
  });

  it("is optional", () => {
    expect(loadSettingsReport({}, opts()).envFile).toBeNull();
  });
});

describe("unknown and ignored names", () => {
  it("reports unknown RELAY_SHELL_* names and ignores the edge variables and other variables", () => {
    const cwd = workdir("RELAY_SHELL_FROM_FILE=1\n");
    const report = loadSettingsReport(
      {
        RELAY_SHELL_MAX_OUPUT: "1",
        relay_shell_edge_domain: "relay.example",
        RELAY_SHELL_EDGE_DRY_RUN: "not-a-bool",
        PATH: "/usr/bin",
      },
      opts({ cwd }),
    );
    expect(report.unknown).toEqual(["RELAY_SHELL_FROM_FILE", "RELAY_SHELL_MAX_OUPUT"]);
  });
});

describe("describeSettings", () => {
  it("keys the effective settings by variable name and shows regexes by source", () => {
    const s = loadSettings({ RELAY_SHELL_POLICY_DENY: "forkbomb|:\\(\\)" }, opts());
    const described = describeSettings(s);
    expect(Object.keys(described)).toHaveLength(Object.keys(s).length);
    expect(described.RELAY_SHELL_POLICY_DENY).toBe("forkbomb|:\\(\\)");
    expect(described.RELAY_SHELL_POLICY_ALLOW).toBeNull();
    expect(described.RELAY_SHELL_MAX_OUTPUT).toBe(65536);
    expect(described.RELAY_SHELL_UNSAFE_NOTICES).toBe(true);
    expect(described.RELAY_SHELL_AUDIT_PATH).toBe("/home/op/.local/state/relay-shell/audit.jsonl");
    expect(Object.keys(described).every((name) => name.startsWith("RELAY_SHELL_"))).toBe(true);
  });
});
