import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadSettings } from "../config/index.js";
import { systemClock } from "../core/index.js";
import { createSshLayer } from "../ssh/index.js";
import { openPolicyBook, policyLine } from "./policy-book.js";

const dir = mkdtempSync(join(tmpdir(), "relay-policy-book-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
    const settings = loadSettings(
      { RELAY_SHELL_INVENTORY: inventory, RELAY_SHELL_SSH_CONFIG: sshConfig },
      { cwd: dir, homeDir: dir },
    );
    const ssh = createSshLayer(settings, {
      clock: systemClock,
      home: dir,
      localUser: "svc",
      agentSocket: "",
      cwd: dir,
    });
    try {
      const book = openPolicyBook(settings, ssh.directory);
      expect(book.forHost({ alias: null, hostname: "10.0.0.5", port: 2222 }).name).toBe("host:web1");
      expect(book.forHost({ alias: null, hostname: "10.0.0.5", port: 22 })).toBe(book.default);
      expect(book.all().map(policyLine)).toEqual([
        "default (settings): mode=open deny=0 allow=0 consent=false confirm_tier3=false max_tier=3",
        `host:web1 (${inventory}): mode=readonly deny=1 allow=0 consent=false confirm_tier3=false max_tier=3`,
      ]);
    } finally {
      ssh.close();
    }
  });
});
