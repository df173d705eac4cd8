import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSettings } from "../../src/config/index.js";
import type { ConsentAct } from "../../src/consent/index.js";
import { systemClock } from "../../src/core/index.js";
import type { ProcessRunner } from "../../src/exec/index.js";
import type { Tool, ToolContext } from "../../src/runner/index.js";
import { createSshLayer, type SshService } from "../../src/ssh/index.js";
import { createConsentActs, createSshTools, createSshTransferTools } from "../../src/tools/index.js";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";

announceSkip("consent acts against real sshd");

const unusedProcesses = new Proxy(
  {},
  { get: () => () => Promise.reject(new Error("no local process here")) },
) as ProcessRunner;

const ctx: ToolContext = {
  signal: new AbortController().signal,
  requestId: "r",
  clientId: "c",
  progress: () => undefined,
};

/**
 * The act's target is the target the tool really dials, and an upload's
 * content digest is the digest of what arrives: checked by running the
 * tools against real OpenSSH servers and reading what they report.
 */
describe.skipIf(SSHD_MISSING)("consent acts bind what the SSH tools really do", () => {
  let fx: SshFixture;
  let target: Sshd;
  let bastion: Sshd;
  let ssh: SshService;
  let tools: Tool[];
  let actOf: (tool: string, raw: Record<string, unknown>) => Promise<ConsentAct>;

  beforeAll(async () => {
    fx = createSshFixture();
    [target, bastion] = await Promise.all([fx.start({ ports: 2 }), fx.start()]);
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({
        web: { hostname: "127.0.0.1", port: target.port, user: fx.user },
        jumped: { hostname: "127.0.0.1", port: target.ports[1], user: fx.user, jump: "bastion" },
        bastion: { hostname: "127.0.0.1", port: bastion.port, user: fx.user },
      }),
    );
    const sshConfig = join(fx.dir, "ssh_config");
    writeFileSync(
      sshConfig,
      `Host cfghost\n  HostName 127.0.0.1\n  Port ${target.ports[1]}\n  User ${fx.user}\n`,
    );
    const settings = loadSettings(
      {
        RELAY_SHELL_INVENTORY: inventory,
        RELAY_SHELL_SSH_CONFIG: sshConfig,
        RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
        RELAY_SHELL_SSH_CONNECT_TIMEOUT: "5",
      },
      { cwd: fx.dir, homeDir: fx.home },
    );
    ssh = createSshLayer(settings, {
      clock: systemClock,
      home: fx.home,
      localUser: fx.user,
      agentSocket: "",
      cwd: fx.dir,
    });
    tools = [
      ...createSshTools({ settings, ssh, processes: unusedProcesses, baseEnv: {} }),
      ...createSshTransferTools({ settings, ssh, clock: systemClock }),
    ];
    const acts = createConsentActs(tools, {
      directory: ssh.directory,
      sessions: { list: () => [] },
      forwards: { list: () => [] },
      settings,
      cwd: fx.dir,
    });
    actOf = async (name, raw) => {
      const parsed = tools.find((t) => t.name === name)!.parse(raw);
      if (!parsed.ok) throw new Error(parsed.error.join("; "));
      const result = await acts(name, parsed.value, { tier: 2, clientId: ctx.clientId });
      if (!result.ok) throw new Error(result.error);
      return result.value;
    };
  });

  afterAll(() => {
    ssh?.close();
    fx?.close();
  });

  async function run(name: string, raw: Record<string, unknown>) {
    const parsed = tools.find((t) => t.name === name)!.parse(raw);
    if (!parsed.ok) throw new Error(parsed.error.join("; "));
    return tools.find((t) => t.name === name)!.run(parsed.value, ctx);
  }

  for (const host of ["web", "jumped", "cfghost"]) {
    it(`${host}: the bound host, port and jump chain are the ones dialled`, async () => {
      const raw = { host, command: "true", known_hosts: "accept-new" };
      const act = await actOf("ssh_exec", raw);
      const outcome = await run("ssh_exec", raw);
      expect(outcome.exitCode).toBe(0);
      const fields = outcome.fields as {
        host_key: { host: string; port: number; mode: string };
        jump_host_keys: Array<{ host: string; port: number }>;
      };
      expect({ host: fields.host_key.host, port: fields.host_key.port, mode: fields.host_key.mode }).toEqual({
        host: act.bound.host,
        port: act.bound.port,
        mode: act.bound.host_key_mode,
      });
      const jump = act.bound.jump as Array<{ host: string; port: number }>;
      expect(fields.jump_host_keys.map((k) => [k.host, k.port])).toEqual(jump.map((h) => [h.host, h.port]));
    });
  }

  it("an upload's content digest is the digest of the file that arrives", async () => {
    const local = join(fx.dir, "payload.bin");
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));
    writeFileSync(local, bytes);
    const remote = `/tmp/relay-consent-${process.pid}.bin`;
    const raw = { host: "web", local_path: local, remote_path: remote, known_hosts: "accept-new" };
    const act = await actOf("ssh_upload", raw);
    expect(act.bound.content).toMatchObject({ type: "file", size: bytes.length });
    await run("ssh_upload", raw);
    const sum = await run("ssh_exec", { host: "web", command: `sha256sum ${remote}; rm -f ${remote}` });
    const digest = (act.bound.content as { sha256: string }).sha256;
    expect(digest).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(sum.body.split(" ")[0]).toBe(digest);
  });
});
