import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountTool, canConnect, INFRA_SKIP_REASON } from "../fixtures/infra.js";
import { createSshFixture, type Sshd, type SshFixture } from "../fixtures/sshd.js";
import {
  commandOf,
  type GuideBlock,
  guideBlocks,
  normalized,
  section,
  shownText,
  substitutions,
  type TranscriptEntry,
  transcriptEntries,
} from "../helpers/guide.js";
import { REPO_ROOT, SERVER_ENTRY } from "../helpers/server.js";

/**
 * The setup guide of docs/infra-broker.md, followed as written on this host
 * (Debian, no systemd): every `sh` block of its "Setting up" section runs in
 * order as root with bash, except the `# with systemd` ones. The receiver is
 * this host too: its blocks create the real account relay-receiver, whose
 * default ~/.ssh/authorized_keys an sshd of the fixture reads, with
 * `UsePAM no`. The `# without systemd, in the foreground` block starts the
 * daemon, and the `# the MCP client's command` block is what the SDK client
 * starts over stdio. Then the cycle of step 8 runs, and its answers are
 * compared with the transcript the guide shows.
 *
 * The only changes to the guide's text are the substitutions set up in
 * beforeAll: the receiver's address and port, the two public keys pasted
 * from the other host, and the source root. `relay-shell` is a shim on PATH that runs the
 * built CLI. The guide creates the accounts relay-infra, relay-shell and
 * relay-receiver and the paths of GUIDE_PATHS; a run first removes what an
 * earlier run left there (only when its marker file says an earlier run made
 * them, so a host's own accounts are never removed), and removes them again
 * at the end. RELAY_GUIDE_TRANSCRIPT=<file> writes the cycle's transcript
 * there, in the guide's form.
 */

const DOC = join(REPO_ROOT, "docs", "infra-broker.md");
const SECTION = "Setting up, from zero to a verified replication";
const ACCOUNTS = ["relay-shell", "relay-infra", "relay-receiver"];
const GUIDE_PATHS = [
  "/etc/relay-shell/infra",
  "/etc/relay-shell/infra-keys",
  "/run/relay-infra",
  "/var/lib/relay-infra",
  "/var/lib/relay-shell",
  "/srv/relay-receiver",
  "/home/relay-receiver",
];
/** Left by a run of this test while it owns the accounts and paths above. */
const MARKER = "/var/tmp/relay-shell-infra-guide.owned";
const SOCKET = "/run/relay-infra/broker.sock";
const BUILT = existsSync(SERVER_ENTRY);
const SKIP = INFRA_SKIP_REASON ?? (BUILT ? null : `${SERVER_ENTRY} is not built (npm run build)`);
if (SKIP) process.stderr.write(`[skipped] infra setup guide: ${SKIP}\n`);

function accountExists(name: string): boolean {
  return spawnSync("getent", ["passwd", name]).status === 0;
}

function idOf(name: string, database: "passwd" | "group"): number {
  const line = spawnSync("getent", [database, name], { encoding: "utf8" }).stdout.trim();
  return Number(line.split(":")[2]);
}

/** Remove what the guide creates; refuses when something is there that no run of this test made. */
function removeGuideState(): void {
  const present = () => [...ACCOUNTS.filter(accountExists), ...GUIDE_PATHS.filter((p) => existsSync(p))];
  const leftovers = present();
  if (leftovers.length > 0 && !existsSync(MARKER)) {
    throw new Error(
      `no earlier run of this test made ${leftovers.join(", ")} (${MARKER} is missing); remove them by hand to run it`,
    );
  }
  for (const name of ACCOUNTS) {
    if (accountExists(name)) accountTool("userdel", ["--force", name], false);
  }
  for (const name of ACCOUNTS) {
    if (spawnSync("getent", ["group", name]).status === 0) accountTool("groupdel", [name], false);
  }
  for (const path of GUIDE_PATHS) rmSync(path, { recursive: true, force: true });
  spawnSync("rmdir", ["/etc/relay-shell"], { stdio: "ignore" });
  // The marker stays while anything is left, so the next run may remove it.
  if (present().length > 0) throw new Error(`could not remove ${present().join(", ")}`);
  rmSync(MARKER, { force: true });
}

/** Files in nested directories, one binary, so a copy that loses or changes bytes shows. */
function writeSource(dir: string): void {
  mkdirSync(join(dir, "css"), { recursive: true });
  mkdirSync(join(dir, "img"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>site</title><p>replicated</p>\n");
  writeFileSync(join(dir, "css", "site.css"), "body { margin: 0 }\n");
  writeFileSync(join(dir, "img", "logo.bin"), Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 251)));
  writeFileSync(join(dir, "empty"), "");
}

describe.skipIf(SKIP !== null)("the setup guide of docs/infra-broker.md, as written", () => {
  const markdown = readFileSync(DOC, "utf8");
  const guide = section(markdown, SECTION);
  const blocks = guideBlocks(guide);
  let work: string;
  let ssh: SshFixture;
  let sshd: Sshd;
  let env: Record<string, string>;
  let sourceRoot: string;
  let daemon: ChildProcess | null = null;
  let daemonLog = "";
  let client: Client | null = null;
  let serverLog = "";
  let subs: ReturnType<typeof substitutions>;

  /** Run one block as root with bash; a failing command fails the test with what it printed. */
  function runBlock(block: GuideBlock): void {
    const script = subs.apply(block.text);
    const r = spawnSync("bash", ["-euo", "pipefail", "-c", script], {
      env,
      encoding: "utf8",
      timeout: 60_000,
    });
    if (r.status !== 0) {
      throw new Error(
        `this block of the guide failed (exit ${r.status}):\n${script}\n${r.stdout}${r.stderr}`,
      );
    }
  }

  /** The daemon, started by its block as a process that stays in the foreground. */
  async function startDaemon(block: GuideBlock): Promise<void> {
    const child = spawn("bash", ["-c", `exec ${subs.apply(commandOf(block))}`], {
      env,
      detached: true,
      stdio: ["ignore", "ignore", "pipe"],
    });
    daemon = child;
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      daemonLog += chunk;
    });
    const deadline = Date.now() + 20_000;
    while (!(await canConnect(SOCKET)) || !daemonLog.includes("listening on ")) {
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`the daemon of the guide did not start on ${SOCKET}:\n${daemonLog}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function stopDaemon(): Promise<void> {
    const child = daemon;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    process.kill(-child.pid, "SIGTERM");
    const timer = setTimeout(() => process.kill(-(child.pid as number), "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** The MCP server as the client block starts it, connected with the SDK client. */
  async function startServer(block: GuideBlock): Promise<Client> {
    const transport = new StdioClientTransport({
      command: "bash",
      args: ["-c", `exec ${subs.apply(commandOf(block))}`],
      env,
      cwd: "/",
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString("utf8");
    });
    const c = new Client({ name: "relay-shell-guide", version: "1.0.0" });
    await c.connect(transport);
    return c;
  }

  beforeAll(async () => {
    removeGuideState();
    writeFileSync(
      MARKER,
      "the accounts and paths of docs/infra-broker.md's setup guide belong to its test\n",
    );
    work = mkdtempSync(join(tmpdir(), "relay-guide-"));
    chmodSync(work, 0o755);
    sourceRoot = join(work, "www");
    writeSource(sourceRoot);
    const bin = join(work, "bin");
    mkdirSync(bin, { mode: 0o755 });
    writeFileSync(join(bin, "relay-shell"), `#!/bin/sh\nexec ${process.execPath} ${SERVER_ENTRY} "$@"\n`, {
      mode: 0o755,
    });
    env = {
      PATH: `${bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
      LANG: "C.UTF-8",
      HOME: "/root",
    };
    ssh = createSshFixture();
    // The account's default authorized_keys, and the fixture's `UsePAM no`: a locked account is refused.
    sshd = await ssh.start({
      extraConfig: () =>
        "Match User relay-receiver\n  AuthorizedKeysFile .ssh/authorized_keys .ssh/authorized_keys2\n",
    });
    const pub = (path: string) => readFileSync(path, "utf8").trim();
    subs = substitutions([
      ["ssh-ed25519 AAAA... relay-infra-broker", () => pub("/etc/relay-shell/infra-keys/backup-key.pub")],
      [
        "backup.example.net ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA...",
        () => `[127.0.0.1]:${sshd.port} ${sshd.hostKeyPublic()}`,
      ],
      ['"port": 22', () => `"port": ${sshd.port}`],
      ["backup.example.net", () => "127.0.0.1"],
      ["/srv/www", () => sourceRoot],
    ]);
  }, 60_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stopDaemon();
    ssh?.close();
    if (work) rmSync(work, { recursive: true, force: true });
    if (existsSync(MARKER)) removeGuideState();
  }, 60_000);

  it("has the blocks the test drives: one daemon, one client command, a systemd alternative", () => {
    const roles = blocks.map((b) => b.role);
    expect(roles.filter((r) => r === "foreground")).toHaveLength(1);
    expect(roles.filter((r) => r === "client")).toHaveLength(1);
    expect(roles).toContain("systemd");
    expect(roles).toContain("receiver");
    expect(roles.indexOf("client")).toBeGreaterThan(roles.indexOf("foreground"));
  });

  it("runs every block without systemd, then the cycle of step 8 as the relay-shell account", async () => {
    for (const block of blocks) {
      if (block.role === "systemd") continue;
      if (block.role === "foreground") await startDaemon(block);
      else if (block.role === "client") client = await startServer(block);
      else runBlock(block);
    }
    expect(subs.unused()).toEqual([]);
    expect(daemonLog).toContain(`listening on ${SOCKET} (1 profile(s) loaded, 0 broken)`);
    const c = client as Client;
    const shellUid = idOf("relay-shell", "passwd");
    const transcript: string[][] = [[], [], []];
    const seen: TranscriptEntry[] = [];
    const call = async (part: number, name: string, args: Record<string, unknown>) => {
      const result = await c.callTool({ name, arguments: args });
      const text = (result.content as Array<{ text?: string }>).map((x) => x.text ?? "").join("");
      const shown = shownText(text);
      const entry = { call: `>>> ${name} ${JSON.stringify(args)}`, lines: shown.split("\n") };
      seen.push(entry);
      transcript[part]?.push(`${entry.call}\n${shown}\n`);
      return { head: entry.lines[0], text, data: result.structuredContent as Record<string, unknown> };
    };

    const run = { profile: "site", run_id: "2026-12-01a" };
    const replicate = { ...run, idempotency_key: "site-2026-12-01a" };
    const status = await call(0, "infra_status", {});
    expect(status.head, serverLog).toBe("ok: OK");
    expect(status.text).toContain(`1 profile(s) usable by uid ${shellUid}, 0 broken`);
    const principal = (status.data.data as { principal: { uid: number; groups: number[] } }).principal;
    expect(principal.uid).toBe(shellUid);
    expect(principal.uid).not.toBe(0);
    expect(principal.groups).toContain(idOf("relay-infra", "group"));
    expect((await call(0, "infra_probe", { profile: "site" })).head).toBe("ok: OK");
    expect((await call(0, "infra_replicate", replicate)).head).toBe("blocked: DRY_RUN_REQUIRED");
    expect((await call(0, "infra_rsync_dry_run", run)).head).toBe("ok: OK");
    expect((await call(0, "infra_replicate", replicate)).head).toBe("ok: OK");
    const verified = await call(0, "infra_verify", run);
    expect(verified.head).toBe("ok: OK");
    expect(verified.data.data).toMatchObject({ replication: "replicated", trusted: true });

    const runDir = "/srv/relay-receiver/site/runs/2026-12-01a";
    expect(readFileSync(join(runDir, "www", "img", "logo.bin"))).toEqual(
      readFileSync(join(sourceRoot, "img", "logo.bin")),
    );
    const again = await call(1, "infra_replicate", replicate);
    expect(again.head).toBe("ok: OK");
    expect(again.data.replayed).toBe(true);
    const conflict = await call(1, "infra_replicate", { ...replicate, run_id: "2026-12-01b" });
    expect(conflict.head).toBe("blocked: IDEMPOTENCY_CONFLICT");
    writeFileSync(join(runDir, "README.txt"), "planted on the receiver\n");
    const planted = await call(2, "infra_verify", run);
    expect(planted.head).toBe("blocked: VERIFY_FAILED");
    expect(planted.data.data).toMatchObject({ differences: [{ path: "README.txt", kind: "extra" }] });

    const out = process.env.RELAY_GUIDE_TRANSCRIPT;
    if (out) writeFileSync(out, transcript.map((part) => part.join("\n")).join("\n----\n\n"));

    // The guide shows this very cycle: the same calls, outcomes and sentences, ids and numbers aside.
    const shown = transcriptEntries(guide);
    expect(shown.map((e) => e.call)).toEqual(seen.map((e) => e.call));
    const gist = (e: TranscriptEntry) => [e.call, ...e.lines.filter((l) => !l.startsWith("data: "))];
    expect(shown.map((e) => gist(e).map(normalized))).toEqual(seen.map((e) => gist(e).map(normalized)));
    expect(guide).not.toMatch(/"principal":\{"uid":0[,}]|usable by uid 0,/);
  }, 180_000);
});
