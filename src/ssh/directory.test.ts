import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { KnownHostsMode } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { createHostDirectory, parseModeArg } from "./directory.js";
import { loadInventory, parseInventory, toListing } from "./inventory.js";
import { createSshLayer } from "./layer.js";
import { loadSshConfig, parseSshConfig } from "./ssh-config.js";
import { targetKey } from "./target.js";

const dir = mkdtempSync(join(tmpdir(), "relay-dir-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("inventory file", () => {
  it("accepts the contract's keys and their aliases", () => {
    const specs = parseInventory(
      JSON.stringify({
        web1: {
          hostname: "10.0.0.5",
          user: "deploy",
          port: 2222,
          identity_file: "~/.ssh/web",
          jump: "bastion",
          known_hosts: "Strict",
        },
        edge: { host: "edge.example.org", proxyjump: "bastion", port: "2200", identityfile: "/k" },
        bare: {},
      }),
      "inv.json",
    );
    expect(specs.map(toListing)).toEqual([
      {
        name: "web1",
        hostname: "10.0.0.5",
        user: "deploy",
        port: 2222,
        identity_file: "~/.ssh/web",
        jump: "bastion",
        source: "inventory",
      },
      {
        name: "edge",
        hostname: "edge.example.org",
        user: null,
        port: 2200,
        identity_file: "/k",
        jump: "bastion",
        source: "inventory",
      },
      {
        name: "bare",
        hostname: "bare",
        user: null,
        port: null,
        identity_file: null,
        jump: null,
        source: "inventory",
      },
    ]);
    expect(specs[0]?.knownHosts).toBe("strict");
  });

  it.each([
    ["invalid JSON", "{", /invalid JSON/],
    ["a top-level array", "[]", /top level must be a JSON object/],
    ["a non-object entry", '{"a": 5}', /entry "a": each entry must be a JSON object/],
    ["an unknown key (a typo)", '{"a": {"hostnmae": "x"}}', /entry "a": .*hostnmae.*accepted keys are/],
    ["a bad port", '{"a": {"port": "22x"}}', /entry "a": port: port must be an integer 1\.\.65535/],
    ["an out-of-range port", '{"a": {"port": 70000}}', /port must be an integer/],
    [
      "a bad host-key mode",
      '{"a": {"known_hosts": "yes"}}',
      /known_hosts must be strict, accept-new or ignore/,
    ],
    ["a host name with a newline", '{"a": {"hostname": "x\\ny"}}', /hostname may contain only/],
    ["an alias with a space", '{"a b": {}}', /alias "a b"/],
  ])("refuses %s with a message naming the entry", (_label, text, pattern) => {
    expect(() => parseInventory(text, "/etc/relay/inv.json")).toThrow(pattern);
    expect(() => parseInventory(text, "/etc/relay/inv.json")).toThrow(
      /^RELAY_SHELL_INVENTORY: \/etc\/relay\/inv\.json: /,
    );
  });

  it("treats an unset path as no inventory and a missing file as an error", () => {
    expect(loadInventory("")).toEqual([]);
    expect(() => loadInventory(join(dir, "missing.json"))).toThrow(
      /RELAY_SHELL_INVENTORY: cannot read .*missing\.json/,
    );
  });
});

describe("ssh_config", () => {
  const text = [
    "User globaluser",
    "Host web1 web2 !web3 *.internal",
    "  HostName %h.example.com",
    "  Port 2222",
    "  IdentityFile ~/.ssh/web",
    "  ProxyJump bastion,jump2:2200",
    "Host bastion",
    "  HostName 10.0.0.1",
    "  Port notanumber",
    "  User ops",
    "Host *",
    "  IdentityFile ~/.ssh/default_%r",
    "  Port 22",
  ].join("\n");
  const cfg = parseSshConfig(text, "/cfg");

  it("lists non-wildcard aliases with the values of their own blocks", () => {
    expect(cfg.aliases).toEqual(["bastion", "web1", "web2"]);
    expect(cfg.specs.map(toListing)).toEqual([
      {
        name: "bastion",
        hostname: "10.0.0.1",
        user: "ops",
        port: null,
        identity_file: null,
        jump: null,
        source: "ssh_config",
      },
      {
        name: "web1",
        hostname: "web1.example.com",
        user: null,
        port: 2222,
        identity_file: "~/.ssh/web",
        jump: "bastion,jump2:2200",
        source: "ssh_config",
      },
      {
        name: "web2",
        hostname: "web2.example.com",
        user: null,
        port: 2222,
        identity_file: "~/.ssh/web",
        jump: "bastion,jump2:2200",
        source: "ssh_config",
      },
    ]);
  });

  it("computes dial options from every matching block, first value winning", () => {
    expect(cfg.compute("db.internal")).toEqual({
      hostname: "db.internal.example.com",
      user: "globaluser",
      port: 2222,
      identityFiles: ["~/.ssh/web", "~/.ssh/default_%r"],
      proxyJump: "bastion,jump2:2200",
    });
    // The negated alias rules the whole block out.
    expect(cfg.compute("web3")).toEqual({
      user: "globaluser",
      port: 22,
      identityFiles: ["~/.ssh/default_%r"],
    });
  });

  it("never runs Match exec or canonicalization lookups", () => {
    const marker = join(dir, "match-exec-ran");
    const evil = parseSshConfig(
      [
        `Match exec "touch ${marker}"`,
        "  User evil",
        "Host x",
        "  CanonicalizeHostName yes",
        "  CanonicalDomains example.com",
      ].join("\n"),
      "/cfg",
    );
    expect(evil.compute("x").user).toBeUndefined();
    expect(existsSync(marker)).toBe(false);
  });

  it("stops start-up on a file the parser rejects, naming the setting", () => {
    const path = join(dir, "broken_config");
    writeFileSync(path, 'Host "unterminated\n  HostName x\n');
    expect(() => loadSshConfig(path)).toThrow();
    expect(() =>
      createSshLayer(
        {
          inventory: "",
          sshConfig: path,
          sshKnownHosts: "accept-new",
          sshKnownHostsFile: join(dir, "kh"),
          sshAllowWeakerKnownHosts: false,
          sshConnectTimeout: 5,
          sshKeepalive: 0,
          sshIdleTimeout: 0,
          maxConns: 4,
        },
        { clock: systemClock, home: dir, localUser: "svc", agentSocket: "", cwd: dir },
      ),
    ).toThrow(new RegExp(`^RELAY_SHELL_SSH_CONFIG: ${path}: `));
  });

  it("refuses a file over its 4 MiB bound instead of cutting it", () => {
    const path = join(dir, "huge_config");
    writeFileSync(path, `Host big\n  HostName 127.0.0.1\n# ${"x".repeat(4 * 1024 * 1024)}\n`);
    expect(() => loadSshConfig(path)).toThrow(
      `ssh_config file ${path} is ${4 * 1024 * 1024 + 33} bytes, more than the 4194304 accepted`,
    );
  });

  it("treats a missing file, a directory and /dev/null as empty", () => {
    expect(loadSshConfig(dir).path).toBeNull();
    expect(loadSshConfig("/dev/null").path).toBeNull();
    const missing = loadSshConfig(join(dir, "nope"));
    expect(missing.path).toBeNull();
    expect(missing.aliases).toEqual([]);
    const path = join(dir, "config");
    writeFileSync(path, "Host a\n  HostName 127.0.0.1\n");
    expect(loadSshConfig(path).path).toBe(path);
  });
});

describe("host directory", () => {
  const sshConfig = parseSshConfig(
    [
      "Host web1",
      "  HostName 10.9.9.9",
      "Host cfgonly",
      "  HostName 10.0.0.7",
      "  User cfguser",
      "  Port 2201",
      "  IdentityFile ~/.ssh/cfg_key",
      "Host *.lab",
      "  HostName %h.corp",
      "  ProxyJump bastion",
    ].join("\n"),
    "/cfg",
  );
  const inventory = parseInventory(
    JSON.stringify({
      web1: {
        hostname: "10.0.0.5",
        user: "deploy",
        port: 2222,
        identity_file: "~/.ssh/web",
        jump: "bastion",
      },
      bastion: { hostname: "10.0.0.1", user: "jump", known_hosts: "strict" },
      lab: { hostname: "10.0.0.9", known_hosts: "ignore" },
    }),
    "inv",
  );
  const make = (defaultMode: KnownHostsMode = "accept-new", allowWeaker = false) =>
    createHostDirectory({
      inventory,
      sshConfig,
      defaultMode,
      allowWeaker,
      home: "/home/relay",
      localUser: "svc",
      cwd: "/srv",
    });

  it("merges ssh_config and inventory, the inventory replacing an alias whole", () => {
    const d = make();
    expect(d.names()).toEqual(["bastion", "cfgonly", "lab", "web1"]);
    expect(toListing(d.lookup("web1"))).toMatchObject({ hostname: "10.0.0.5", source: "inventory" });
    expect(d.sshConfig()).toEqual({ path: "/cfg", aliases: ["cfgonly", "web1"] });
    expect(toListing(d.lookup("bob@box.example"))).toEqual({
      name: "bob@box.example",
      hostname: "box.example",
      user: "bob",
      port: null,
      identity_file: null,
      jump: null,
      source: "explicit",
    });
  });

  it("resolves per-call values over the entry over ssh_config over defaults", () => {
    const d = make();
    const t = d.resolve("web1");
    expect(t).toMatchObject({
      host: "10.0.0.5",
      port: 2222,
      user: "deploy",
      identityFiles: ["/home/relay/.ssh/web"],
      identitiesRequired: true,
      mode: "accept-new",
    });
    expect(t.jump).toEqual([
      {
        label: "bastion",
        host: "10.0.0.1",
        port: 22,
        user: "jump",
        identityFiles: [],
        identitiesRequired: false,
        mode: "strict",
        jump: [],
      },
    ]);
    const o = d.resolve("web1", {
      user: "root",
      port: 22,
      keyPath: "keys/k",
      jump: "ops@10.1.1.1:2200,none2",
    });
    expect(o).toMatchObject({ user: "root", port: 22, identityFiles: ["/srv/keys/k"] });
    expect(o.jump.map((h) => [h.user, h.host, h.port])).toEqual([
      ["ops", "10.1.1.1", 2200],
      ["svc", "none2", 22],
    ]);
    expect(d.resolve("cfgonly")).toMatchObject({
      host: "10.0.0.7",
      user: "cfguser",
      port: 2201,
      identityFiles: ["/home/relay/.ssh/cfg_key"],
      identitiesRequired: false,
    });
    // A wildcard block applies to names in neither file, ProxyJump included.
    const lab = d.resolve("db.lab");
    expect(lab.host).toBe("db.lab.corp");
    expect(lab.jump[0]?.host).toBe("10.0.0.1");
    expect(d.resolve("web1", { jump: "none" }).jump).toEqual([]);
    expect(d.resolve("[::1]", { port: 2200 }).host).toBe("::1");
  });

  it("validates the per-call mode on every call and refuses a downgrade unless allowed", () => {
    const d = make();
    expect(() => d.resolve("web1", { knownHosts: "yes" })).toThrow(
      "known_hosts must be one of 'accept-new', 'ignore', 'strict'",
    );
    expect(() => parseModeArg("STRICT ")).not.toThrow();
    expect(() => d.resolve("web1", { knownHosts: "ignore" })).toThrow(
      /weaker than 'accept-new'.*ALLOW_WEAKER/,
    );
    expect(() => d.resolve("bastion", { knownHosts: "accept-new" })).toThrow(/weaker than 'strict'/);
    // Stronger is always fine, and so is the entry's own weak mode.
    expect(d.resolve("web1", { knownHosts: "strict" }).mode).toBe("strict");
    expect(d.resolve("lab").mode).toBe("ignore");
    expect(d.resolve("lab", { knownHosts: "accept-new" }).mode).toBe("accept-new");
    expect(make("accept-new", true).resolve("web1", { knownHosts: "ignore" }).mode).toBe("ignore");
  });

  it("never checks a hop more weakly than the call", () => {
    const d = make("ignore");
    const t = d.resolve("web1", { knownHosts: "strict" });
    expect(t.jump[0]?.mode).toBe("strict");
    expect(make("ignore").resolve("web1").jump[0]?.mode).toBe("strict");
  });

  it("records the effective mode and never throws doing so", () => {
    const d = make();
    expect(d.effectiveMode("lab")).toBe("ignore");
    expect(d.effectiveMode("web1")).toBe("accept-new");
    expect(d.effectiveMode("web1", "Strict")).toBe("strict");
    expect(d.effectiveMode("web1", "bogus")).toBe("bogus");
  });

  it("reports the names a call reaches for the deny probe", () => {
    const d = make();
    expect(d.reachedNames("web1")).toEqual(["10.0.0.5", "bastion", "10.0.0.1"]);
    expect(d.reachedNames("x.example", "ops@10.2.2.2:22")).toEqual([
      "x.example",
      "ops@10.2.2.2:22",
      "10.2.2.2",
    ]);
  });

  it("refuses host and user names that could not be dialled or pinned safely", () => {
    const d = make();
    expect(() => d.resolve("")).toThrow("host is empty");
    expect(() => d.resolve("bad host")).toThrow(/invalid host name/);
    expect(() => d.resolve("a\nb")).toThrow(/invalid host name/);
    expect(() => d.resolve("x", { port: 70000 })).toThrow(/port 70000 out of range/);
    expect(() => d.resolve("x", { user: "a b" })).toThrow(/invalid user name/);
    expect(() => d.resolve("x", { jump: "a,b,c,d,e,f,g,h,i" })).toThrow(/exceeds the limit of 8/);
  });

  it("keys connections by every parameter that matters", () => {
    const d = make("accept-new", true);
    const base = targetKey(d.resolve("web1"));
    expect(targetKey(d.resolve("web1"))).toBe(base);
    for (const overrides of [
      { knownHosts: "strict" },
      { knownHosts: "ignore" },
      { keyPath: "/other" },
      { user: "other" },
      { port: 2200 },
      { jump: "none" },
      { jump: "other-bastion" },
    ]) {
      expect(targetKey(d.resolve("web1", overrides))).not.toBe(base);
    }
  });
});
