import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

announceSkip("ssh_check tier suite");

/**
 * ssh_check dials every host it is given. Through the built server and the SDK client, against a
 * real sshd: Tier 0 for the hosts the operator configured (inventory and ssh_config aliases),
 * Tier 1 for any other, so readonly mode admits the first and refuses the second before anything
 * is dialled.
 */
describe.skipIf(SSHD_MISSING)("ssh_check: Tier 0 for inventory hosts only", () => {
  let fx: SshFixture;
  let fleet: Sshd;
  let readonly: TestServer;
  let open: TestServer;
  /** Connections the fixture's sshd has accepted so far. */
  const connections = () => fleet.log().split("Connection from").length - 1;

  beforeAll(async () => {
    fx = createSshFixture();
    fleet = await fx.start({ ports: 2 });
    const at = (port: number) => ({ hostname: "127.0.0.1", port, user: fx.user });
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(inventory, JSON.stringify({ web: at(fleet.port) }));
    // `cfgbox` is an alias the operator wrote; `*.wild` only fills in what an explicit name lacks.
    const sshConfig = join(fx.dir, "ssh_config");
    const block = `  HostName 127.0.0.1\n  Port ${fleet.ports[1]}\n  User ${fx.user}\n`;
    writeFileSync(sshConfig, `Host cfgbox\n${block}Host *.wild\n${block}`);
    const settings = {
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: sshConfig,
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
    };
    [readonly, open] = await Promise.all([
      startServer({ ...settings, RELAY_SHELL_POLICY_MODE: "readonly" }),
      startServer(settings),
    ]);
  });
  afterAll(async () => {
    await Promise.all([readonly?.close(), open?.close()]);
    fx?.close();
  });

  it.each([
    ["an inventory alias", "web", ["web: ok"]],
    ["an ssh_config alias", "cfgbox", ["cfgbox: ok"]],
    ["both", "web, cfgbox", ["web: ok", "cfgbox: ok"]],
    ["the whole inventory", "", ["cfgbox: ok", "web: ok"]],
  ])("admits %s in readonly mode as Tier 0", async (_label, hosts, lines) => {
    const r = await readonly.call("ssh_check", { hosts });
    expect(r.text.split("\n")).toEqual(lines);
    expect(r.structured).toMatchObject({ tier: 0, basis: "read_only_tool", denied: false });
    expect(readonly.records().at(-1)).toMatchObject({ tool: "ssh_check", tier: 0, denied: false });
  });

  it.each([
    ["an address", "127.0.0.1", "127.0.0.1"],
    ["user@alias", "someone@web", "someone@web"],
    ["a name only a wildcard block matches", "box.wild", "box.wild"],
    ["one stranger among inventory hosts", "web, box.wild, cfgbox", "box.wild"],
  ])("refuses %s in readonly mode as Tier 1, dialling nothing", async (_label, hosts, outside) => {
    const before = connections();
    const r = await readonly.call("ssh_check", { hosts });
    expect(r.text).toBe("[DENIED tier 1 (REVERSIBLE): readonly mode refuses Tier 1 (REVERSIBLE)]");
    expect(r.structured).toMatchObject({
      tool: "ssh_check",
      tier: 1,
      tier_name: "REVERSIBLE",
      basis: "default",
      basis_part: `not in the inventory: ${outside}`,
      denied: true,
    });
    expect(readonly.records().at(-1)).toMatchObject({ tool: "ssh_check", tier: 1, denied: true });
    expect(connections()).toBe(before);
  });

  it("runs a host outside the inventory in open mode, at Tier 1", async () => {
    const r = await open.call("ssh_check", { hosts: "box.wild" });
    expect(r.text).toBe("box.wild: ok");
    expect(r.structured).toMatchObject({ tier: 1, basis: "default", denied: false, ok_hosts: 1 });
    expect(open.records().at(-1)).toMatchObject({ tool: "ssh_check", tier: 1, denied: false });
    const known = await open.call("ssh_check", { hosts: "web" });
    expect(known.text).toBe("web: ok");
    expect(known.structured).toMatchObject({ tier: 0, basis: "read_only_tool" });
  });
});
