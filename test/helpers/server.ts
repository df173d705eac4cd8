import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const REPO_ROOT = resolve(import.meta.dirname, "..", "..");
export const SERVER_ENTRY = join(REPO_ROOT, "dist", "cli", "main.js");

export interface TestServer {
  client: Client;
  dir: string;
  auditPath: string;
  /** The server process. */
  pid: number;
  /** Call a tool (as `clientId` in the request `_meta` when given) and return its text and structuredContent. */
  call(
    name: string,
    args?: Record<string, unknown>,
    clientId?: string,
  ): Promise<{ text: string; structured: Record<string, unknown> }>;
  /** Audit records written so far, parsed. */
  records(): Array<Record<string, unknown>>;
  auditText(): string;
  stderr(): string;
  close(): Promise<void>;
}

/** Environment for a child server: only what it needs, plus the test's settings. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ["PATH", "HOME", "LANG", "USER", "TMPDIR"]) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...extra };
}

/**
 * Start the BUILT server on streamable HTTP at 127.0.0.1:`port`, in `dir`, and
 * wait until it logs that it is serving. Its stderr stays readable through
 * `stderr()`; an exit before that rejects with what it printed.
 */
export async function spawnHttpServer(
  dir: string,
  port: number,
  settings: Record<string, string> = {},
): Promise<{ child: ChildProcess; stderr: () => string }> {
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: baseEnv({
      RELAY_SHELL_TRANSPORT: "http",
      RELAY_SHELL_HTTP_PORT: String(port),
      RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
      XDG_STATE_HOME: join(dir, "state"),
      ...settings,
    }),
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      if (stderr.includes('"msg":"serving"')) resolve();
    });
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  return { child, stderr: () => stderr };
}

/** Start the BUILT server over stdio with the SDK client, in its own temp dir. */
export async function startServer(settings: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "relay-shell-test-"));
  const auditPath = join(dir, "audit.jsonl");
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_ENTRY],
    env: baseEnv({ RELAY_SHELL_AUDIT_PATH: auditPath, XDG_STATE_HOME: join(dir, "state"), ...settings }),
    cwd: dir,
    stderr: "pipe",
  });
  let stderrText = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderrText += chunk.toString("utf8");
  });
  const client = new Client({ name: "relay-shell-tests", version: "1.0.0" });
  await client.connect(transport);
  const readAudit = () => {
    try {
      return readFileSync(auditPath, "utf8");
    } catch {
      return "";
    }
  };
  return {
    client,
    dir,
    auditPath,
    pid: transport.pid ?? -1,
    async call(name, args = {}, clientId) {
      const result = await client.callTool({
        name,
        arguments: args,
        ...(clientId === undefined ? {} : { _meta: { client_id: clientId } }),
      });
      const content = result.content as Array<{ type: string; text?: string }>;
      const text = content.map((c) => c.text ?? "").join("");
      return { text, structured: (result.structuredContent ?? {}) as Record<string, unknown> };
    },
    records() {
      return readAudit()
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    auditText: readAudit,
    stderr: () => stderrText,
    async close() {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
