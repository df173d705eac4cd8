import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tagBook, testFanout } from "../../test/helpers/policies.js";
import { createAuditLog } from "../audit/index.js";
import { createConfirmBroker } from "../broker/index.js";
import { loadSettings, type Settings } from "../config/index.js";
import { type ApprovalVerifier, openSqliteStore } from "../consent/index.js";
import { cryptoIds, systemClock, type Tier } from "../core/index.js";
import { createCallCounter } from "../metrics/index.js";
import { type Classifier, createClassifier, type EffectivePolicy, settingsPolicy } from "../policy/index.js";
import { createConfirmGate } from "./confirm-gate.js";
import { createConsentGate } from "./consent-gate.js";
import { createRelay, type RelayDeps } from "./relay.js";

/** Commands of every tier; none of them runs: the tool only counts that it was called. */
const COMMANDS = [
  "ls -la /srv",
  "cat /etc/hostname",
  "touch /tmp/canary",
  "mkdir /tmp/canary-dir",
  "apt-get install -y nginx",
  "systemctl restart nginx",
  "rm -rf /tmp/canary-dir",
  "dd if=/dev/zero of=/tmp/canary bs=1 count=1",
  "cat /tmp/secret-canary",
];
const HOSTS = ["prod1", "prod2", "staging1", "lab1", "lab2", "misc1"];

const never: ApprovalVerifier = { verify: () => ({ ok: false, error: "no signatures in this test" }) };

type Layer = Pick<EffectivePolicy, "mode" | "maxTier" | "confirmTier3" | "consent"> & {
  deny: boolean;
  allow: boolean;
};

const layer: fc.Arbitrary<Layer> = fc.record({
  mode: fc.constantFrom("open", "guarded", "readonly"),
  maxTier: fc.constantFrom<Tier>(0, 1, 2, 3),
  confirmTier3: fc.boolean(),
  consent: fc.boolean(),
  deny: fc.boolean(),
  allow: fc.boolean(),
});

function policyOf(base: EffectivePolicy, tag: string, l: Layer): EffectivePolicy {
  return {
    ...base,
    name: `tag:${tag}`,
    source: "policy.toml",
    mode: l.mode,
    maxTier: l.maxTier,
    confirmTier3: l.confirmTier3,
    consent: l.consent,
    deny: [...base.deny, ...(l.deny ? [{ regex: /secret/u, label: `deny[0] of tag:${tag}` }] : [])],
    allow: l.allow ? [{ regex: /nginx/u, label: `allow[0] of tag:${tag}` }] : base.allow,
  };
}

/** What a call's text says happened to it. */
function outcomeOf(text: string): string {
  if (text.startsWith("[DENIED")) return "refused";
  if (text.startsWith("[CONFIRM REQUIRED")) return "needs_confirmation";
  if (text.startsWith("[CONSENT REQUIRED")) return "held_for_consent";
  return "admitted";
}

describe("policy_explain agrees with what the call then gets", () => {
  let dir: string;
  let classifier: Classifier;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-explain-"));
    classifier = await createClassifier();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The settings of a test relay: its own audit file in the suite's directory, and `env`. */
  const settingsOf = (env: Record<string, string> = {}) =>
    loadSettings({ RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"), ...env }, { cwd: dir });

  /** A relay over those settings with the suite's classifier. */
  function relayOf(settings: Settings, parts: Pick<RelayDeps, "tools" | "gates" | "policies">) {
    const audit = createAuditLog(
      { path: settings.auditPath, format: "jsonl", chain: false, stderrEcho: false },
      { clock: systemClock },
    );
    return createRelay({ settings, classifier, audit, metrics: createCallCounter(), ...parts });
  }

  it("for generated policies per tag, host lists and commands of every tier", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ prod: layer, staging: layer, lab: layer }),
        fc.subarray(HOSTS, { minLength: 1 }),
        fc.constantFrom(...COMMANDS),
        async (layers, hosts, command) => {
          const settings = settingsOf();
          const base = settingsPolicy(settings);
          const tagged = Object.entries(layers).map(([tag, l]) => [tag, policyOf(base, tag, l)] as const);
          const book = tagBook(base, Object.fromEntries(tagged));
          const store = openSqliteStore(join(dir, `consent-${Math.random()}.db`), {
            clock: systemClock,
            ids: cryptoIds,
            busyTimeoutMs: 500,
          });
          if (!store.ok) throw new Error(store.error.detail);
          const ran: string[][] = [];
          const tool = testFanout({ run: (hosts) => ran.push(hosts) });
          const broker = createConfirmBroker(
            { ttlSeconds: 60, rollback: false },
            { clock: systemClock, ids: cryptoIds },
          );
          const consent = createConsentGate({
            store: store.value,
            clock: systemClock,
            verifier: never,
            settings: {
              leaseMode: "manual",
              leaseTtlSeconds: 60,
              leaseBudget: 5,
              sessionIdleSeconds: 600,
              approvalTtlSeconds: 60,
              waitSeconds: 0,
            },
            describe: () => "the act",
            actOf: async (name, args, { tier }) => ({
              ok: true,
              value: { tool: name, tier, bound: { ...(args as object) } },
            }),
          });
          const relay = relayOf(settings, {
            tools: [tool],
            gates: [createConfirmGate(broker), consent],
            policies: book,
          });
          const args = { command, hosts: hosts.join(",") };
          try {
            const explained = relay.explain("fleet", args, { clientId: "" });
            const done = await relay.run("fleet", args, {
              requestId: "1",
              clientId: "",
              session: "s1",
              signal: new AbortController().signal,
            });
            expect({ hosts, command, verdict: explained.verdict }).toEqual({
              hosts,
              command,
              verdict: outcomeOf(done.text),
            });
            // The hosts it said would not run did not run; the others did.
            const notRun = ((explained.hosts_not_run ?? []) as Array<{ host_count: number }>).reduce(
              (n, g) => n + g.host_count,
              0,
            );
            if (explained.verdict === "admitted") expect(ran[0]?.length).toBe(hosts.length - notRun);
            else expect(ran).toEqual([]);
          } finally {
            await store.value.close();
          }
        },
      ),
      { numRuns: 150 },
    );
  }, 120_000);

  it("names the pattern that decided and shows its text only when the operator allows it", () => {
    const explainWith = (env: Record<string, string>) => {
      const settings = settingsOf({ RELAY_SHELL_POLICY_DENY: "hidden-canary-word", ...env });
      const relay = relayOf(settings, { tools: [testFanout({})] });
      return relay.explain(
        "fleet",
        { command: "cat /tmp/hidden-canary-word", hosts: "lab1" },
        { clientId: "" },
      );
    };
    const hidden = explainWith({});
    expect(hidden).toMatchObject({
      verdict: "refused",
      reason: "matched RELAY_SHELL_POLICY_DENY",
      matched: "RELAY_SHELL_POLICY_DENY",
    });
    expect(JSON.stringify(hidden)).not.toContain("hidden-canary-word");
    const shown = explainWith({ RELAY_SHELL_POLICY_EXPLAIN_PATTERNS: "true" });
    expect(shown).toMatchObject({
      matched: "RELAY_SHELL_POLICY_DENY",
      matched_pattern: "hidden-canary-word",
    });
  });
});
