import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadSettings, type Settings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { createSshLayer, type HostDirectory } from "../ssh/index.js";
import { openPolicyBook, policyLine } from "./policy-book.js";

const dir = mkdtempSync(join(tmpdir(), "relay-policy-book-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `use` with the settings `env` gives and the host directory of an SSH layer built on them. */
function withDirectory<T>(
  env: Record<string, string>,
  use: (settings: Settings, directory: HostDirectory) => T,
): T {
  const settings = loadSettings(env, { cwd: dir, homeDir: dir });
  const ssh = createSshLayer(settings, {
    clock: systemClock,
    home: dir,
    localUser: "svc",
    agentSocket: "",
    cwd: dir,
  });
  try {
    return use(settings, ssh.directory);
  } finally {
    ssh.close();
  }
}

describe("the policy book the server is built with", () => {
  it("matches inventory entries where the SSH layer dials them, and ignores ssh_config's", () => {
    const inventory = join(dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({ web1: { hostname: "10.0.0.5", policy: { mode: "readonly", deny: ["^ssh_exec "] } } }),
    );
    // The entry names no port: ssh_config's block for its address gives one. The alias `other`
    // reaches the same place, but an ssh_config alias has no policy of its own to conflict with.
    const sshConfig = join(dir, "ssh_config");
    writeFileSync(sshConfig, "Host 10.0.0.5\n  Port 2222\nHost other\n  HostName 10.0.0.5\n  Port 2222\n");
    // Running as root every file is the relay's to write: the trust check is tested on its own.
    const book = withDirectory(
      { RELAY_SHELL_INVENTORY: inventory, RELAY_SHELL_SSH_CONFIG: sshConfig },
      (settings, d) => openPolicyBook(settings, d, () => []),
    );
    expect(book.forHost({ alias: null, hostname: "10.0.0.5", port: 2222 }).name).toBe("host:web1");
    expect(book.forHost({ alias: null, hostname: "10.0.0.5", port: 22 })).toBe(book.default);
    expect(book.all().map(policyLine)).toEqual([
      "default (settings): mode=open deny=0 allow=0 consent=false confirm_tier3=false max_tier=3",
      `host:web1 (${inventory}): mode=readonly deny=1 allow=0 consent=false confirm_tier3=false max_tier=3`,
    ]);
  });

  it("holds an inventory that picks hosts' policies to the policy file's rule, and no other", () => {
    const open = (entries: Record<string, unknown>, policy: string) => () => {
      const inventory = join(dir, "inv-check.json");
      writeFileSync(inventory, JSON.stringify(entries));
      const policyFile = join(dir, "policy-check.toml");
      writeFileSync(policyFile, policy);
      const env = {
        RELAY_SHELL_INVENTORY: inventory,
        RELAY_SHELL_POLICY_FILE: policyFile,
        RELAY_SHELL_SSH_CONFIG: join(dir, "none"),
      };
      // A check that finds the inventory writable by the relay and the policy file safe.
      const check = (path: string) =>
        path === inventory ? [`${path} is owned by the relay's own uid 1000, which could rewrite it`] : [];
      return withDirectory(env, (settings, d) => openPolicyBook(settings, d, check));
    };
    const tagged = open(
      { web1: { hostname: "10.0.0.5", tags: ["prod"] } },
      '[tags.prod]\nmode = "readonly"\n',
    );
    expect(tagged).toThrow(
      /RELAY_SHELL_INVENTORY: .*inv-check\.json: its tags and policies decide hosts' policies, and the relay must not be able to change the policy it obeys: .* owned by the relay's own uid/,
    );
    const own = open({ web1: { hostname: "10.0.0.5", policy: { max_tier: 0 } } }, "");
    expect(own).toThrow(/decide hosts' policies/);
    // Tags no policy names decide nothing: the inventory is read as before.
    const words = open({ web1: { hostname: "10.0.0.5", tags: ["eu"] } }, '[tags.prod]\nmode = "readonly"\n');
    expect(
      words()
        .all()
        .map((p) => p.name),
    ).toEqual(["default", "tag:prod"]);
  });
});
