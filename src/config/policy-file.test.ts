import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RelayError } from "../core/index.js";
import { trustAnchorProblems } from "../files/index.js";
import { loadPolicyFile } from "./policy-file.js";

const root = mkdtempSync(join(tmpdir(), "relay-policy-file-"));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** An account that owns none of these files: the relay's uid in the accepted case. */
const OTHER_UID = 54321;

/**
 * The real check for the relay running as OTHER_UID. What access(2) answers is this test
 * process's own right, and a test that runs as root may write anything; so that one answer
 * is left out, and every other rule (owner, modes, directories up to /) still applies.
 */
function asOtherAccount(path: string, owner: { selfUid: number }): string[] {
  return trustAnchorProblems(path, owner).filter((p) => !p.includes("writable by the relay's process"));
}

let count = 0;

/** A policy file in a directory of its own, 0644 in 0755. */
function policyFile(name: string, text: string, mode = 0o644): string {
  const dir = join(root, `case-${count++}`);
  mkdirSync(dir, { mode: 0o755 });
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

function load(path: string) {
  return loadPolicyFile(path, { selfUid: OTHER_UID }, asOtherAccount);
}

function refusal(path: string): string {
  try {
    load(path);
  } catch (err) {
    expect(err).toBeInstanceOf(RelayError);
    expect((err as RelayError).type).toBe("ConfigError");
    return (err as Error).message;
  }
  throw new Error("loaded");
}

const TOML = `
[default]
deny = ["^ssh_exec .*shutdown"]

[tags.prod]
mode = "readonly"

[tags.staging]
mode = "guarded"
allow = ["^ssh_exec systemctl restart ", "^ssh_exec docker compose up "]
consent = { enabled = true, lease_mode = "window" }

[tags.lab]
mode = "open"
max_tier = 3
`;

describe("RELAY_SHELL_POLICY_FILE", () => {
  it("is none when unset", () => {
    expect(load("")).toBeNull();
  });

  it("reads TOML: the default and every tag in the file's order", () => {
    const path = policyFile("policy.toml", TOML);
    const file = load(path);
    expect(file?.path).toBe(path);
    expect(file?.default?.deny?.map((r) => r.source)).toEqual(["^ssh_exec .*shutdown"]);
    expect([...(file?.tags.keys() ?? [])]).toEqual(["prod", "staging", "lab"]);
    expect(file?.tags.get("prod")).toEqual({ mode: "readonly" });
    expect(file?.tags.get("staging")).toMatchObject({
      mode: "guarded",
      consent: true,
      consentLeaseMode: "window",
    });
    expect(file?.tags.get("staging")?.allow).toHaveLength(2);
    expect(file?.tags.get("lab")).toEqual({ mode: "open", maxTier: 3 });
  });

  it("reads JSON, and a file without default or tags", () => {
    const path = policyFile("policy.json", JSON.stringify({ tags: { prod: { mode: "readonly" } } }));
    const file = load(path);
    expect(file?.default).toBeNull();
    expect(file?.tags.get("prod")).toEqual({ mode: "readonly" });
    const empty = load(policyFile("empty.toml", ""));
    expect(empty?.default).toBeNull();
    expect(empty?.tags.size).toBe(0);
  });

  it.each([
    ["policy.yaml", "mode: open"],
    ["policy", "{}"],
  ])("refuses a name that does not say its format (%s)", (name, text) => {
    const path = policyFile(name, text);
    expect(refusal(path)).toBe(
      `RELAY_SHELL_POLICY_FILE: ${path}: the name must end in .toml or .json, which says how the file is written`,
    );
  });

  it("refuses a missing file", () => {
    const path = join(root, "absent.toml");
    expect(refusal(path)).toBe(`RELAY_SHELL_POLICY_FILE: cannot read ${path}: the file does not exist`);
  });

  it.each([
    [
      "policy.toml",
      '[tags.prod]\nmode = "strict"\n',
      "tags.prod.mode: mode must be open, guarded or readonly",
    ],
    ["policy.json", '{"default": {"deny": ["x", "("]}}', /default\.deny\[1\]: Invalid regular expression/],
    ["policy.toml", "[tag.prod]\nmode = 'open'\n", 'unknown key "tag"; accepted keys are default, tags'],
    ["policy.json", '{"tags": {"a b": {}}}', 'tags: tag name "a b" must be 1..64 letters, digits and . _ -'],
    ["policy.json", '{"tags": ["prod"]}', "tags: tags must be a table of tag name → policy"],
    [
      "policy.json",
      '{"tags": {"prod": {"mode": "open", "deny_all": true}}}',
      /tags\.prod: unknown key "deny_all"/,
    ],
    ["policy.json", "[1]", "the top level must be a table with default and tags"],
    ["policy.json", "{", /invalid JSON: /],
    ["policy.toml", "[default\nmode = 1", /invalid TOML at line 1, column \d+: /],
  ])("refuses %s holding %j, naming the file and the field", (name, text, expected) => {
    const path = policyFile(name, text);
    const message = refusal(path);
    expect(message.startsWith(`RELAY_SHELL_POLICY_FILE: ${path}: `)).toBe(true);
    const rest = message.slice(`RELAY_SHELL_POLICY_FILE: ${path}: `.length);
    if (typeof expected === "string") expect(rest).toBe(expected);
    else expect(rest).toMatch(expected);
  });

  it("refuses a file over 1 MiB, naming the bound", () => {
    const path = policyFile("big.toml", `# ${"x".repeat(1024 * 1024)}\n`);
    expect(refusal(path)).toMatch(
      /^RELAY_SHELL_POLICY_FILE: .*big\.toml is \d+ bytes, more than the 1048576 accepted$/,
    );
  });
});

describe("RELAY_SHELL_POLICY_FILE as a trust anchor", () => {
  const PREFIX = "the relay must not be able to change the policy it obeys: ";

  it("refuses a file the relay's own account owns", () => {
    const path = policyFile("policy.toml", TOML);
    const owner = statSync(path).uid;
    expect(() => loadPolicyFile(path, { selfUid: owner })).toThrow(
      `RELAY_SHELL_POLICY_FILE: ${path}: ${PREFIX}`,
    );
    expect(() => loadPolicyFile(path, { selfUid: owner })).toThrow(
      `${path} is owned by the relay's own uid ${owner}, which could rewrite it`,
    );
  });

  it.each([
    [0o664, "its group (mode 0664)"],
    [0o646, "others (mode 0646)"],
  ])("refuses a file others may write (mode %o)", (mode, who) => {
    const path = policyFile("policy.toml", TOML, mode);
    expect(() => loadPolicyFile(path, { selfUid: OTHER_UID })).toThrow(
      `${path} is writable by ${who}; only its owner may write it`,
    );
  });

  // Giving a directory to another account takes root.
  it.skipIf(process.getuid?.() !== 0)("refuses a file in a directory the relay's account owns", () => {
    const path = policyFile("policy.toml", TOML);
    const dir = join(path, "..");
    chownSync(dir, OTHER_UID, OTHER_UID);
    expect(refusal(path)).toContain(
      `directory ${dir} is owned by the relay's own uid ${OTHER_UID}, which could replace what it holds`,
    );
  });

  it("as root, always refuses, and says why", () => {
    const path = policyFile("policy.toml", TOML);
    expect(() => loadPolicyFile(path, { selfUid: 0 })).toThrow(
      "a relay running as root can never trust a file; run it under an account of its own",
    );
  });
});
