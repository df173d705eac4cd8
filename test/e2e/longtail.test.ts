import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

/**
 * The long-tail subcommand rules seen through the built server
 * (docs/adr/0018-long-tail-subcommands.md).
 */

describe("long-tail subcommands under a deny-all list", () => {
  let s: TestServer;
  beforeAll(async () => {
    // Every call matches the deny list, so nothing below runs; the tier is still computed.
    s = await startServer({ RELAY_SHELL_POLICY_DENY: "." });
  });
  afterAll(async () => {
    await s.close();
  });

  it.each([
    ["glab repo delete owner/repo", 3, "destructive_subcommand"],
    ["glab repo unregister owner/repo", 2, "destructive_subcommand"],
    ["sudo -n snap remove firefox", 2, "privilege_escalation"],
    ["mycli --profile prod drop cache", 2, "destructive_subcommand"],
    ["kubectl delete --help", 0, "proven_read"],
    ["passwd --help", 0, "proven_read"],
    ["conda env list", 1, "default"],
    ["hub commit -m delete", 1, "default"],
    ["kubectl delete --help; rm -rf /nonexistent-relay-test", 3, "file_destruction"],
    ["shutdown -h", 3, "power_kernel"],
  ] as const)("%s is tier %i (%s)", async (command, tier, basis) => {
    const r = await s.call("shell_exec", { command });
    expect(r.structured).toMatchObject({ tier, basis, denied: true });
  });
});

describe("guarded mode and a tool no table names", () => {
  let s: TestServer;
  let tool: string;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_POLICY_MODE: "guarded" });
    // A stand-in CLI that deletes the item it is given, like any `<tool> delete <item>`.
    tool = join(s.dir, "notes-cli");
    writeFileSync(tool, '#!/bin/sh\nif [ "$1" = delete ]; then rm -f -- "$2"; fi\necho "$@"\n');
    chmodSync(tool, 0o755);
  });
  afterAll(async () => {
    await s.close();
  });

  it("refuses `<tool> delete <item>` as Tier 3 and the item survives", async () => {
    const canary = join(s.dir, "canary-note");
    writeFileSync(canary, "precious");
    const r = await s.call("shell_exec", { command: `${tool} delete ${canary}` });
    expect(r.text).toBe(
      "[DENIED tier 3 (IRREVERSIBLE): guarded mode refuses Tier 3 (IRREVERSIBLE) without an RELAY_SHELL_POLICY_ALLOW match]",
    );
    expect(r.structured).toMatchObject({ basis: "destructive_subcommand" });
    expect(existsSync(canary)).toBe(true);
  });

  it("admits its help request", async () => {
    const r = await s.call("shell_exec", { command: `${tool} delete --help` });
    expect(r.text).toBe("[exit 0]\ndelete --help\n");
  });
});
