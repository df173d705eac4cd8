import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aliasHost, tagBook, testFanout } from "../../test/helpers/policies.js";
import { createAuditLog } from "../audit/index.js";
import { loadSettings } from "../config/index.js";
import { RelayError, systemClock } from "../core/index.js";
import { type Classifier, createClassifier, type PolicyBook, settingsPolicy } from "../policy/index.js";
import { createAdmission } from "./admission.js";

type FleetArgs = { command: string; hosts: string };

describe("a call's policy is its hosts' (docs/policy.md)", () => {
  let dir: string;
  let classifier: Classifier;
  const hostCalls: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-host-policies-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function admitWith(book: PolicyBook | undefined, env: Record<string, string> = {}) {
    const auditPath = join(dir, "audit.jsonl");
    const settings = loadSettings({ RELAY_SHELL_AUDIT_PATH: auditPath, ...env }, { cwd: dir });
    const audit = createAuditLog(
      { path: auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    const tool = testFanout({
      hosts: (hosts) => {
        hostCalls.push(hosts);
        if (hosts.includes("?")) throw new RelayError("ValueError", "no such host");
        return hosts.split(",").map(aliasHost);
      },
    });
    const admit = createAdmission({ settings, classifier, audit, ...(book ? { policies: book } : {}) });
    return { settings, admit: (a: FleetArgs) => admit(tool, a, { clientId: "" }) };
  }

  function threeEnvironments() {
    const { settings } = admitWith(undefined);
    const base = settingsPolicy(settings);
    return tagBook(base, {
      prod: { mode: "readonly" },
      staging: {
        mode: "guarded",
        allow: [{ regex: /apt/u, label: "allow[0] of tag:staging" }],
        consent: true,
      },
      lab: { mode: "open" },
    });
  }

  it("with one policy in force, never resolves a host: today's path, today's words", () => {
    hostCalls.length = 0;
    const { admit } = admitWith(undefined, { RELAY_SHELL_POLICY_MODE: "readonly" });
    const refused = admit({ command: "touch /tmp/x", hosts: "prod1?" });
    expect(hostCalls).toEqual([]);
    expect(refused).toMatchObject({ admitted: false, reason: "readonly mode refuses Tier 1 (REVERSIBLE)" });
  });

  it("runs the hosts whose policy admits it, and refuses or holds the others by name", () => {
    const { admit } = admitWith(threeEnvironments());
    const a = admit({ command: "apt-get install -y x", hosts: "prod1,staging1,lab1,lab2,prod2" });
    if (!a.admitted) throw new Error(`refused: ${a.reason}`);
    expect(a.policy.name).toBe("tag:lab");
    const refusals = [...(a.hostRefusals ?? new Map())].map(([host, err]) => [
      host,
      (err as RelayError).type,
      (err as Error).message,
    ]);
    expect(refusals).toEqual([
      ["prod1", "PolicyDenied", "policy tag:prod: readonly mode refuses Tier 2 (STATEFUL)"],
      ["prod2", "PolicyDenied", "policy tag:prod: readonly mode refuses Tier 2 (STATEFUL)"],
      [
        "staging1",
        "PolicyHeld",
        "policy tag:staging holds it for signed consent: run it on these hosts in a call of their own",
      ],
    ]);
  });

  it("refuses the whole call when no host may run it, naming each policy's reason", () => {
    const { admit } = admitWith(threeEnvironments());
    const a = admit({ command: "apt-get install -y x", hosts: "prod1,staging1" });
    expect(a.admitted).toBe(false);
    expect(a.admitted ? "" : a.text).toBe(
      "[DENIED tier 2 (STATEFUL): no host of the call may run it here: 1 host(s) under policy tag:prod: readonly mode refuses Tier 2 (STATEFUL); 1 host(s) under policy tag:staging holds it for signed consent: run it on these hosts in a call of their own]",
    );
  });

  it("gives a call to hosts of one policy that policy, gates included", () => {
    const { admit } = admitWith(threeEnvironments());
    const prod = admit({ command: "cat /etc/hostname", hosts: "prod1,prod2" });
    expect(prod).toMatchObject({ admitted: true, tier: 0 });
    if (prod.admitted) expect(prod.policy.name).toBe("tag:prod");
    const staging = admit({ command: "apt-get install -y x", hosts: "staging1" });
    expect(staging).toMatchObject({ admitted: true, reason: "guarded: allowed by allow[0] of tag:staging" });
    // One policy: the consent gate decides for the whole call, so nothing is held back here.
    if (staging.admitted) expect([staging.policy.consent, staging.hostRefusals]).toEqual([true, undefined]);
    expect(admit({ command: "rm -rf /tmp/canary", hosts: "prod1" })).toMatchObject({
      admitted: false,
      reason: "policy tag:prod: readonly mode refuses Tier 3 (IRREVERSIBLE)",
    });
  });

  it("refuses, without dialling, a call whose hosts cannot be resolved to a policy", () => {
    const { admit } = admitWith(threeEnvironments());
    expect(admit({ command: "true", hosts: "lab1,nowhere?" })).toMatchObject({
      admitted: false,
      tier: 3,
      reason: "hosts unknown",
    });
  });

  it("lets the settings' deny list refuse on every host, whatever the host's policy admits", () => {
    const { settings } = admitWith(undefined, { RELAY_SHELL_POLICY_DENY: "canary" });
    const book = tagBook(settingsPolicy(settings), { lab: { mode: "open" }, prod: { mode: "readonly" } });
    const { admit } = admitWith(book, { RELAY_SHELL_POLICY_DENY: "canary" });
    const a = admit({ command: "cat /tmp/canary", hosts: "lab1,prod1" });
    expect(a.admitted ? "" : a.reason).toBe(
      "no host of the call may run it here: 1 host(s) under policy tag:lab: matched RELAY_SHELL_POLICY_DENY; 1 host(s) under policy tag:prod: matched RELAY_SHELL_POLICY_DENY",
    );
  });
});
