import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { type BenchServer, connectMcp, type McpCommand, ROOT } from "./harness.js";

/**
 * The peer servers the benchmark measures relay-shell beside, installed only
 * by `npm run bench:peers` into bench/peers/node_modules.
 */

const PEERS_DIR = join(ROOT, "bench", "peers");
export const NOT_INSTALLED = "not installed (npm run bench:peers)";

const CODEX_ENTRY = join(
  PEERS_DIR,
  "node_modules",
  "@openai",
  "codex-shell-tool-mcp",
  "bin",
  "mcp-server.js",
);
const SSH_MCP_ENTRY = join(PEERS_DIR, "node_modules", "ssh-mcp", "build", "index.js");
const NODELAY_PRELOAD = join(PEERS_DIR, "nodelay-preload.cjs");

export const codexInstalled = (): boolean => existsSync(CODEX_ENTRY);
export const sshMcpInstalled = (): boolean => existsSync(SSH_MCP_ENTRY);

/** A started peer and how to run `true` through it. */
export interface Peer {
  server: BenchServer;
  startupMs: number;
  runTrue(): Promise<void>;
}

function codexCommand(dir: string): McpCommand {
  return {
    command: process.execPath,
    args: [CODEX_ENTRY],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, CODEX_HOME: join(dir, "codex") },
    cwd: dir,
  };
}

/**
 * codex-shell-tool-mcp refuses to run anything until the client has told it
 * the sandbox policy; `login: false` keeps bash from reading a login profile.
 */
export async function startCodex(dir: string): Promise<Peer> {
  mkdirSync(join(dir, "codex"), { recursive: true });
  const { server, startupMs } = await connectMcp(codexCommand(dir));
  await server.client.request(
    {
      method: "codex/sandbox-state/update",
      params: {
        sandboxPolicy: { type: "danger-full-access" },
        sandboxCwd: dir,
        codexLinuxSandboxExe: null,
        useLinuxSandboxBwrap: false,
      },
    },
    z.object({}).passthrough(),
  );
  return {
    server,
    startupMs,
    async runTrue() {
      const text = await server.call("shell", { command: "true", workdir: dir, login: false });
      if (!text.includes('"exit_code":0')) throw new Error(`codex shell failed: ${text.slice(0, 300)}`);
    },
  };
}

export interface SshTarget {
  port: number;
  user: string;
  key: string;
}

/**
 * ssh-mcp with one profile for the benchmark's sshd, approval off; with
 * `nodelay`, NODE_OPTIONS preloads the module that sets TCP_NODELAY on
 * every socket it opens.
 */
export async function startSshMcp(dir: string, target: SshTarget, nodelay: boolean): Promise<Peer> {
  const home = join(dir, nodelay ? "ssh-mcp-nodelay" : "ssh-mcp");
  const configDir = join(home, "config");
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const config = join(configDir, "config.toml");
  writeFileSync(
    config,
    [
      "[defaults]",
      'defaultProfile = "bench"',
      'approvalMode = "auto"',
      "",
      "[[profiles]]",
      'name = "bench"',
      'host = "127.0.0.1"',
      `port = ${target.port}`,
      `user = "${target.user}"`,
      'auth = "key"',
      `keyRef = "${target.key}"`,
      'role = "admin"',
      'approvalPolicy = "auto"',
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    XDG_CONFIG_HOME: home,
    XDG_STATE_HOME: join(home, "state"),
    XDG_DATA_HOME: join(home, "data"),
  };
  if (nodelay) env.NODE_OPTIONS = `--require ${NODELAY_PRELOAD}`;
  const { server, startupMs } = await connectMcp({
    command: process.execPath,
    args: [SSH_MCP_ENTRY, `--config=${config}`],
    env,
    cwd: home,
  });
  return {
    server,
    startupMs,
    async runTrue() {
      await server.call("run-command", { command: "true" });
    },
  };
}
