import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Page } from "playwright-core";
import { ensureSystemUser, type SystemUser } from "../fixtures/infra.js";
import { baseEnv, SERVER_ENTRY } from "./server.js";

const RUNUSER = "/usr/sbin/runuser";
/** The relay's own account in the console suites: it must not be able to write the passkeys file. */
const RELAY_USER = "relayconsole";

/** Why the console suites cannot run the relay as an account of its own, or null when they can. */
export const CONSOLE_ACCOUNT_SKIP_REASON: string | null =
  process.geteuid?.() !== 0
    ? "the console suites run the server as an account of its own: run as root"
    : !existsSync(RUNUSER)
      ? `${RUNUSER} is not installed (util-linux)`
      : null;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface ConsoleWorld {
  root: string;
  user: SystemUser;
  home: string;
  /** The operator's passkeys file (root-owned, in a root-owned 0755 directory); made by enrolment. */
  passkeys: string;
  /** XDG_STATE_HOME of the relay. */
  state: string;
  audit: string;
  cleanup(): void;
}

export function createConsoleWorld(): ConsoleWorld {
  const user = ensureSystemUser(RELAY_USER);
  const root = mkdtempSync(join(tmpdir(), "console-"));
  chmodSync(root, 0o755);
  const home = join(root, "home");
  const state = join(home, "state");
  for (const dir of [home, state]) {
    mkdirSync(dir, { recursive: true });
    chownSync(dir, user.uid, user.gid);
    chmodSync(dir, 0o700);
  }
  const anchors = join(root, "anchors");
  mkdirSync(anchors, { mode: 0o755 });
  chmodSync(anchors, 0o755);
  return {
    root,
    user,
    home,
    passkeys: join(anchors, "passkeys"),
    state,
    audit: join(home, "audit.jsonl"),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

export interface Enrolment {
  url: string;
  code: string;
  /** Resolves with the CLI's exit status and output once it exits. */
  done: Promise<{ status: number | null; stdout: string; stderr: string }>;
}

/** Start `relay-shell console enrol` (the built CLI) as the operator and wait for its address and code. */
export async function startEnrolment(args: string[], env: Record<string, string> = {}): Promise<Enrolment> {
  const child = spawn(process.execPath, [SERVER_ENTRY, "console", "enrol", ...args], {
    env: baseEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const done = new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    child.once("exit", (status) => resolve({ status, stdout, stderr }));
  });
  const started = await new Promise<{ url: string; code: string }>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const match = /Open (http:\/\/\S+) in a browser on this machine and type the code (\S+)/.exec(stdout);
      if (match?.[1] && match[2]) resolve({ url: match[1], code: match[2] });
    });
    child.once("exit", (status) => reject(new Error(`console enrol exited ${status}: ${stdout}${stderr}`)));
  });
  return { ...started, done };
}

/** Drive the enrolment page: type the code, let the virtual authenticator register, wait for the answer. */
export async function enrolInBrowser(page: Page, enrolment: Enrolment): Promise<string> {
  await page.goto(enrolment.url);
  await page.fill("#code", enrolment.code);
  await page.click("#enrol button");
  // Locators, not waitForFunction: the page's CSP forbids the eval that would need.
  await page.locator("#status", { hasText: /Enrolled|failed/ }).waitFor();
  return (await page.textContent("#status")) ?? "";
}

/** Log in on the console's login page with the page's authenticator: "logged in", or the failure shown. */
export async function loginInBrowser(page: Page, base: string): Promise<string> {
  await page.goto(`${base}/console/login`);
  await page.click("#login");
  await page
    .locator("#posture-mode")
    .or(page.locator("#status", { hasText: "failed" }))
    .waitFor();
  if ((await page.locator("#posture-mode").count()) > 0) return "logged in";
  return (await page.textContent("#status")) ?? "";
}

export interface ConsoleRelay {
  client: Client;
  stderr(): string;
  close(): Promise<void>;
}

/** The built relay over stdio, as the world's account, with the console on its own loopback port. */
export async function startStdioRelay(
  world: ConsoleWorld,
  settings: Record<string, string>,
): Promise<ConsoleRelay> {
  const transport = new StdioClientTransport({
    command: RUNUSER,
    args: ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY],
    env: baseEnv({
      HOME: world.home,
      USER: world.user.name,
      XDG_STATE_HOME: world.state,
      RELAY_SHELL_AUDIT_PATH: world.audit,
      RELAY_SHELL_CONSOLE: "true",
      RELAY_SHELL_CONSOLE_PASSKEYS: world.passkeys,
      ...settings,
    }),
    cwd: world.home,
    stderr: "pipe",
  });
  let stderr = "";
  const serving = new Promise<void>((resolve) => {
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      if (stderr.includes('"msg":"console serving"')) resolve();
    });
  });
  const client = new Client({ name: "relay-shell-tests", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (err) {
    throw new Error(`the relay did not start: ${String(err)}\n${stderr}`);
  }
  await serving;
  return { client, stderr: () => stderr, close: () => client.close() };
}

export interface HttpRelay {
  base: string;
  child: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

/** The built relay on streamable HTTP (127.0.0.1:`port`), as the world's account, the console beside /mcp. */
export async function startHttpRelay(
  world: ConsoleWorld,
  port: number,
  settings: Record<string, string>,
): Promise<HttpRelay> {
  const child = spawn(RUNUSER, ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY], {
    env: baseEnv({
      HOME: world.home,
      USER: world.user.name,
      XDG_STATE_HOME: world.state,
      RELAY_SHELL_AUDIT_PATH: world.audit,
      RELAY_SHELL_TRANSPORT: "http",
      RELAY_SHELL_HTTP_PORT: String(port),
      RELAY_SHELL_CONSOLE: "true",
      RELAY_SHELL_CONSOLE_PASSKEYS: world.passkeys,
      ...settings,
    }),
    cwd: world.home,
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
  return {
    base: `http://localhost:${port}`,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** One raw HTTP request to 127.0.0.1:`port` with exactly the headers given (Host included). */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body = "",
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers, setHost: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.once("error", reject);
    req.end(body);
  });
}
