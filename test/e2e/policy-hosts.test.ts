import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLEET_SKIP_REASON, type Fleet, startFleet } from "../fixtures/fleet.js";
import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  type ConsentWorld,
  createConsentWorld,
} from "../helpers/consent.js";
import { baseEnv, SERVER_ENTRY } from "../helpers/server.js";

/**
 * Policy per host and per tag (docs/policy.md) against real sshd: six
 * inventory hosts tagged prod, staging and lab, each its own loopback
 * address, one policy file the operator owns. The relay runs as an account
 * of its own, which cannot write the policy it obeys.
 */
const SKIP = CONSENT_SKIP_REASON ?? FLEET_SKIP_REASON;
const TAGS = ["prod", "prod", "staging", "staging", "lab", "lab"] as const;

const POLICY = `# the three environments of docs/policy.md
[tags.prod]
mode = "readonly"
# The probes too stay off production: a policy's own deny pattern, named by its place in the file.
deny = ['^ssh_(check|keyscan) ']

[tags.staging]
mode = "guarded"
consent = true

[tags.lab]
mode = "open"
confirm_tier3 = true
`;

describe.skipIf(SKIP !== null)("policy per host and per tag, one relay, three environments", () => {
  let world: ConsentWorld;
  let fleet: Fleet;
  let relay: ConsentRelay;
  let canary: string;
  let policyFile: string;
  let env: Record<string, string>;
  const names = TAGS.map((tag, i) => `${tag}${(i % 2) + 1}`);

  beforeAll(async () => {
    world = createConsentWorld();
    fleet = await startFleet(TAGS.length);
    // What the relay's account reads: its own copy of the client key, the inventory, the pins.
    const key = join(world.home, "id_fleet");
    copyFileSync(fleet.clientKey, key);
    chownSync(key, world.user.uid, world.user.gid);
    chmodSync(key, 0o600);
    const knownHosts = join(world.work, "known_hosts");
    copyFileSync(fleet.files.knownHosts, knownHosts);
    chmodSync(knownHosts, 0o644);
    // Its tags pick hosts' policies, so the inventory is the operator's too, beside the policy file.
    const inventory = join(world.root, "anchors", "inventory.json");
    const entries = fleet.hosts.map((h, i) => [
      names[i],
      { hostname: h.address, port: h.port, user: fleet.user, identity_file: key, tags: [TAGS[i]] },
    ]);
    writeFileSync(inventory, JSON.stringify(Object.fromEntries(entries)));
    chmodSync(inventory, 0o644);
    // The operator's: root-owned 0644 in the root-owned 0755 directory beside allowed-signers.
    policyFile = join(world.root, "anchors", "policy.toml");
    writeFileSync(policyFile, POLICY);
    chmodSync(policyFile, 0o644);
    canary = join(world.work, "canary");
    writeFileSync(canary, "");
    chmodSync(canary, 0o666);
    env = {
      RELAY_SHELL_CONSENT: "false",
      RELAY_SHELL_POLICY_FILE: policyFile,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(world.work, "no-ssh-config"),
      RELAY_SHELL_SSH_KNOWN_HOSTS: "strict",
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: knownHosts,
    };
    relay = await world.startRelay(env);
  }, 120_000);

  afterAll(async () => {
    await relay?.close();
    fleet?.stop();
    world?.cleanup();
  });

  const lines = () =>
    readFileSync(canary, "utf8")
      .split("\n")
      .filter((l) => l !== "");
  const command = () => `echo ran >> ${canary}`;

  it("refuses the command on prod, holds it on staging and runs it on lab, in one fan-out", async () => {
    const before = lines().length;
    const r = await relay.call("ssh_fanout", { command: command(), hosts: names.join(","), concurrency: 6 });
    const body = JSON.parse(r.text) as {
      results: Array<{ host: string; exit_code: number | null; output: string }>;
    };
    const byHost = Object.fromEntries(body.results.map((x) => [x.host, x]));
    for (const host of ["prod1", "prod2"]) {
      expect(byHost[host]).toEqual({
        host,
        exit_code: null,
        output: "[DENIED: policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]",
      });
    }
    for (const host of ["staging1", "staging2"]) {
      expect(byHost[host]?.output).toBe(
        "[HELD: policy tag:staging holds it for signed consent: run it on these hosts in a call of their own]",
      );
    }
    for (const host of ["lab1", "lab2"]) expect(byHost[host]).toMatchObject({ exit_code: 0, output: "" });
    // Only the two lab hosts ran it: prod and staging were never dialled for it.
    expect(lines().length - before).toBe(2);
    expect(r.structured.failed_hosts).toBe(4);
  });

  it("gives a call to one environment that environment's policy, its gate included", async () => {
    const before = lines().length;
    const prod = await relay.call("ssh_exec", { host: "prod1", command: command() });
    expect(prod.text).toBe(
      "[DENIED tier 1 (REVERSIBLE): policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]",
    );
    expect((await relay.call("ssh_exec", { host: "prod1", command: "cat /etc/hostname" })).text).toMatch(
      /^\[exit 0\]/,
    );
    const staging = await relay.call("ssh_fanout", { command: command(), hosts: "staging1,staging2" });
    expect(staging.text).toMatch(/^\[CONSENT REQUIRED id=[0-9a-f]+/);
    const lab = await relay.call("ssh_exec", { host: "lab1", command: command() });
    expect(lab.text).toBe("[exit 0]\n");
    expect(lines().length - before).toBe(1);
  });

  it("finds a host's policy by its address as well as by its alias", async () => {
    const prod = fleet.hosts[0];
    if (!prod) throw new Error("no fleet");
    const before = lines().length;
    const r = await relay.call("ssh_exec", {
      host: `${fleet.user}@${prod.address}`,
      port: prod.port,
      identity_file: join(world.home, "id_fleet"),
      command: command(),
    });
    expect(r.text).toBe(
      "[DENIED tier 1 (REVERSIBLE): policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]",
    );
    expect(lines().length).toBe(before);
  });

  it("gives a host reached through a jump host its own policy, never the hop's", async () => {
    const before = lines().length;
    // The prod host only carries the connection: the command runs on lab1, under lab's policy.
    const lab = await relay.call("ssh_exec", { host: "lab1", jump: "prod1", command: command() });
    expect(lab.text).toBe("[exit 0]\n");
    // And a lab hop lends a prod target nothing.
    const prod = await relay.call("ssh_exec", { host: "prod1", jump: "lab1", command: command() });
    expect(prod.text).toBe(
      "[DENIED tier 1 (REVERSIBLE): policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]",
    );
    expect(lines().length - before).toBe(1);
  });

  it("policy_explain says what each of those calls then got, and runs nothing", async () => {
    const before = lines().length;
    const explain = async (tool: string, args: Record<string, unknown>) =>
      JSON.parse((await relay.call("policy_explain", { tool, arguments: args })).text) as Record<
        string,
        unknown
      >;
    const fan = await explain("ssh_fanout", { command: command(), hosts: names.join(",") });
    expect(fan).toMatchObject({
      verdict: "admitted",
      tier: 1,
      policy: { name: "tag:lab", source: policyFile, mode: "open" },
      hosts_not_run: [
        { hosts: "prod[1-2]", host_count: 2, verdict: "refused" },
        { hosts: "staging[1-2]", host_count: 2, verdict: "held_for_consent" },
      ],
    });
    expect(await explain("ssh_exec", { host: "prod1", command: command() })).toMatchObject({
      verdict: "refused",
      reason: "policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)",
      policy: { name: "tag:prod" },
    });
    expect(await explain("ssh_exec", { host: "staging1", command: command() })).toMatchObject({
      verdict: "held_for_consent",
      policy: { name: "tag:staging" },
    });
    expect(await explain("ssh_exec", { host: "lab1", command: command() })).toMatchObject({
      verdict: "admitted",
      policy: { name: "tag:lab" },
    });
    expect(lines().length).toBe(before);
    // Each explanation is a record of its own, and the call it explains is not.
    const explained = world.records().filter((rec) => rec.tool === "policy_explain");
    expect(explained.length).toBeGreaterThanOrEqual(4);
    // A call's record names the policy that decided it.
    const refusedProd = world
      .records()
      .filter((rec) => rec.tool === "ssh_exec" && (rec.args as { host?: string }).host === "prod1");
    expect(refusedProd.at(0)?.args).toMatchObject({ host: "prod1", policy: "tag:prod" });
  });

  it("policy_explain agrees with what the call then gets, over generated fan-outs", async () => {
    // Commands of Tier 0, 1 and 3, each aimed only at the canary; held acts stay few (the consent queue).
    const commands = [`cat ${canary}`, command(), `rm -f ${canary}.gone`];
    const outcomeOf = (text: string) =>
      text.startsWith("[DENIED")
        ? "refused"
        : text.startsWith("[CONFIRM REQUIRED")
          ? "needs_confirmation"
          : text.startsWith("[CONSENT REQUIRED")
            ? "held_for_consent"
            : "admitted";
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(names, { minLength: 1 }),
        fc.constantFrom(...commands),
        async (hosts, cmd) => {
          const args = { command: cmd, hosts: hosts.join(","), concurrency: 6 };
          const explained = JSON.parse(
            (await relay.call("policy_explain", { tool: "ssh_fanout", arguments: args })).text,
          );
          const before = lines().length;
          const done = await relay.call("ssh_fanout", args);
          expect({ hosts, cmd, verdict: explained.verdict }).toEqual({
            hosts,
            cmd,
            verdict: outcomeOf(done.text),
          });
          if (explained.verdict !== "admitted") return;
          // The hosts it said would not run did not: only the others appended to the canary.
          const notRun = (explained.hosts_not_run ?? []).reduce(
            (n: number, g: { host_count: number }) => n + g.host_count,
            0,
          );
          const results = (JSON.parse(done.text) as { results: Array<{ exit_code: number | null }> }).results;
          expect(results.filter((r) => r.exit_code === 0).length).toBe(hosts.length - notRun);
          if (cmd === command()) expect(lines().length - before).toBe(hosts.length - notRun);
        },
      ),
      { numRuns: 30 },
    );
  }, 120_000);

  it("past 100 hosts, files the hosts its policies refuse or hold as one failure group per policy", async () => {
    // 120 aliases, 40 for each environment, spread over that environment's two hosts.
    const width = 40;
    const aliases = TAGS.flatMap((tag, i) =>
      i % 2 === 1
        ? []
        : Array.from({ length: width }, (_, k) => {
            const host = fleet.hosts[i + (k % 2)];
            if (!host) throw new Error("no fleet");
            const name = `${tag}${String(k + 1).padStart(3, "0")}`;
            return [
              name,
              { hostname: host.address, port: host.port, user: fleet.user, tags: [tag] },
            ] as const;
          }),
    );
    const key = join(world.home, "id_fleet");
    const inventory = join(world.root, "anchors", "inventory-wide.json");
    writeFileSync(
      inventory,
      JSON.stringify(Object.fromEntries(aliases.map(([n, e]) => [n, { ...e, identity_file: key }]))),
    );
    chmodSync(inventory, 0o644);
    const wide = await world.startRelay({ ...env, RELAY_SHELL_INVENTORY: inventory });
    try {
      const before = lines().length;
      const r = await wide.call("ssh_fanout", {
        command: command(),
        hosts: aliases.map(([n]) => n).join(","),
        concurrency: 16,
      });
      const body = JSON.parse(r.text) as {
        host_count: number;
        fanout_id: string;
        groups: Array<{ hosts: string; host_count: number; exit_code: number | null }>;
        failures: Array<{ error: string; hosts: string; host_count: number; message: string }>;
      };
      expect(body.host_count).toBe(120);
      expect(body.groups).toEqual([{ hosts: "lab[001-040]", host_count: 40, exit_code: 0, output: "" }]);
      expect(body.failures).toEqual([
        {
          error: "PolicyDenied tag:prod",
          hosts: "prod[001-040]",
          host_count: 40,
          message: "[DENIED: policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]",
        },
        {
          error: "PolicyHeld tag:staging",
          hosts: "staging[001-040]",
          host_count: 40,
          message:
            "[HELD: policy tag:staging holds it for signed consent: run it on these hosts in a call of their own]",
        },
      ]);
      expect(r.structured).toMatchObject({ host_count: 120, failed_hosts: 80 });
      // Only the lab's 40 ran it; a refused host read back by id says why it did not.
      expect(lines().length - before).toBe(width);
      const one = await wide.call("ssh_fanout_result", { fanout_id: body.fanout_id, host: "prod007" });
      expect(one.text).toBe("[DENIED: policy tag:prod: readonly mode refuses Tier 1 (REVERSIBLE)]");
    } finally {
      await wide.close();
    }
  }, 120_000);

  it("decides each host of ssh_check and ssh_keyscan by its own policy, dialling only the admitted ones", async () => {
    const check = await relay.call("ssh_check", { hosts: "prod1,lab1" });
    expect(check.text.split("\n")).toEqual([
      "prod1: [DENIED: policy tag:prod: matched deny[0] of tag:prod]",
      "lab1: ok",
    ]);
    const [prod, lab] = [fleet.hosts[0], fleet.hosts[4]];
    if (!prod || !lab) throw new Error("no fleet");
    const scan = await relay.call("ssh_keyscan", { hosts: `${prod.address},${lab.address}`, port: lab.port });
    expect(scan.text).toContain(
      `# ${prod.address}: [DENIED: policy tag:prod: matched deny[0] of tag:prod]\n`,
    );
    expect(scan.text).toContain(`[${lab.address}]:${lab.port} ssh-ed25519 `);
    expect(scan.text).not.toContain(`[${prod.address}]:${prod.port} ssh-`);
    expect((await relay.call("ssh_check", { hosts: "prod1,prod2" })).text).toBe(
      "[DENIED tier 0 (READ_ONLY): policy tag:prod: matched deny[0] of tag:prod]",
    );
  });

  it("server_info lists the policies in force, counting patterns, never showing them", async () => {
    const info = JSON.parse((await relay.call("server_info")).text) as {
      policies: Array<Record<string, unknown>>;
      consent?: unknown;
    };
    expect(info.policies.map((p) => [p.name, p.mode, p.consent])).toEqual([
      ["default", "open", false],
      ["tag:prod", "readonly", false],
      ["tag:staging", "guarded", true],
      ["tag:lab", "open", false],
    ]);
    expect(info.policies[1]).toMatchObject({ source: policyFile, deny_patterns: 1, max_tier: 3 });
    // Consent is on where a policy turns it on, so its section is there.
    expect(info.consent).toBeDefined();
  });

  it("--check-config, as the relay's account, prints each policy in force and never a pattern's text", () => {
    const r = spawnSync(
      "/usr/sbin/runuser",
      ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY, "--check-config"],
      {
        env: baseEnv({ HOME: world.home, USER: world.user.name, ...world.settings(env) }),
        cwd: world.home,
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(r.status).toBe(0);
    const lines = r.stderr.split("\n").filter((line) => line.startsWith("relay_shell: policy in force: "));
    expect(lines).toEqual([
      "relay_shell: policy in force: default (settings): mode=open deny=0 allow=0 consent=false confirm_tier3=false max_tier=3",
      `relay_shell: policy in force: tag:prod (${policyFile}): mode=readonly deny=1 allow=0 consent=false confirm_tier3=false max_tier=3`,
      `relay_shell: policy in force: tag:staging (${policyFile}): mode=guarded deny=0 allow=0 consent=true confirm_tier3=false max_tier=3`,
      `relay_shell: policy in force: tag:lab (${policyFile}): mode=open deny=0 allow=0 consent=false confirm_tier3=true max_tier=3`,
    ]);
    expect(r.stderr).not.toContain("check|keyscan");
  });

  it("refuses to start on a policy file or a tagged inventory its own account can write", async () => {
    chownSync(policyFile, world.user.uid, world.user.gid);
    try {
      await expect(world.startRelay(env)).rejects.toThrow(
        /RELAY_SHELL_POLICY_FILE: .*policy\.toml: the relay must not/,
      );
    } finally {
      chownSync(policyFile, 0, 0);
    }
    // The same inventory in a directory the relay owns: it could move prod1 under the lab's tag.
    const writable = join(world.work, "inventory.json");
    copyFileSync(env.RELAY_SHELL_INVENTORY ?? "", writable);
    await expect(world.startRelay({ ...env, RELAY_SHELL_INVENTORY: writable })).rejects.toThrow(
      /RELAY_SHELL_INVENTORY: .*inventory\.json: its tags and policies decide hosts' policies/,
    );
    expect(existsSync(policyFile)).toBe(true);
  });
});
