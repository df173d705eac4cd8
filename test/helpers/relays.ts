import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ConsentWorld } from "./consent.js";
import { baseEnv, REPO_ROOT, SERVER_ENTRY } from "./server.js";

/**
 * Several built relays over HTTP on one PostgreSQL state, each as the consent world's account,
 * with the shipped HAProxy configuration (deploy/haproxy.cfg) in front, all on loopback.
 */

const HAPROXY = "/usr/sbin/haproxy";
const RUNUSER = "/usr/sbin/runuser";
const HAPROXY_CONFIG = join(REPO_ROOT, "deploy", "haproxy.cfg");
/** The names deploy/haproxy.cfg has server lines for. */
export const RELAY_NAMES = ["relay-a", "relay-b", "relay-c"] as const;

export const HAPROXY_SKIP_REASON: string | null = existsSync(HAPROXY) ? null : `${HAPROXY} is not installed`;

interface FleetRelay {
  name: string;
  port: number;
  audit: string;
  child: ChildProcess;
  stderr(): string;
}

export interface RelayFleet {
  relays: FleetRelay[];
  /** http://127.0.0.1:<port> of the balancer. */
  base: string;
  relay(name: string): FleetRelay;
  /** Start the named relay again (after kill), on its own port, audit file and name. */
  restart(name: string): Promise<FleetRelay>;
  /** SIGKILL, and wait for the exit. */
  kill(name: string): Promise<void>;
  /** Wait until HAProxy's check sees the named relays up (or down). */
  waitHealth(names: readonly string[], up: boolean): Promise<void>;
  stop(): Promise<void>;
}

export interface FleetClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** The relay the balancer keeps this MCP session on, from its Mcp-Session-Id. */
  holder(): string;
  call(name: string, args?: Record<string, unknown>): Promise<{ text: string; isError: boolean }>;
  close(): Promise<void>;
}

/** The processes whose parent is `pid` (from /proc, as `ps --ppid` would list them). */
function childrenOf(pid: number): number[] {
  const listed = spawnSync("ps", ["--ppid", String(pid), "-o", "pid="], { encoding: "utf8" }).stdout;
  return listed
    .split("\n")
    .map((line) => Number(line.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function startRelay(
  world: ConsentWorld,
  name: string,
  port: number,
  settings: Record<string, string>,
): Promise<FleetRelay> {
  const dir = join(world.home, name);
  mkdirSync(dir, { recursive: true });
  spawnSync("chown", [`${world.user.uid}:${world.user.gid}`, dir]);
  const audit = join(dir, "audit.jsonl");
  const child = spawn(RUNUSER, ["-u", world.user.name, "--", process.execPath, SERVER_ENTRY], {
    env: baseEnv({
      HOME: world.home,
      USER: world.user.name,
      ...world.settings({
        RELAY_SHELL_TRANSPORT: "http",
        RELAY_SHELL_HTTP_PORT: String(port),
        RELAY_SHELL_INSTANCE: name,
        RELAY_SHELL_AUDIT_PATH: audit,
        XDG_STATE_HOME: join(dir, "state"),
        ...settings,
      }),
    }),
    cwd: world.home,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 30 s: ${stderr}`)), 30_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      if (stderr.includes('"msg":"serving"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited ${code}: ${stderr}`));
    });
  });
  return { name, port, audit, child, stderr: () => stderr };
}

/** Start HAProxy in the foreground on the shipped configuration, and wait for its listener. */
async function startHaproxy(listen: number, relays: FleetRelay[]): Promise<ChildProcess> {
  const env: Record<string, string> = { ...baseEnv(), RELAY_SHELL_EDGE_LISTEN: `127.0.0.1:${listen}` };
  for (const relay of relays) {
    env[`RELAY_SHELL_EDGE_${relay.name.replace("relay-", "RELAY_").toUpperCase()}`] =
      `127.0.0.1:${relay.port}`;
  }
  const child = spawn(HAPROXY, ["-f", HAPROXY_CONFIG, "-db"], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  for (let i = 0; i < 100; i += 1) {
    if (child.exitCode !== null) throw new Error(`haproxy exited ${child.exitCode}: ${stderr}`);
    const answered = await fetch(`http://127.0.0.1:${listen}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (answered === 200) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`haproxy did not answer on ${listen}: ${stderr}`);
}

export async function startRelayFleet(
  world: ConsentWorld,
  stateUrl: string,
  settings: Record<string, string> = {},
  options: { oauth?: boolean } = {},
): Promise<RelayFleet> {
  // The balancer's address first: with OAuth on, it is every relay's issuer.
  const listen = await freePort();
  const shared = {
    RELAY_SHELL_STATE_URL: stateUrl,
    ...(options.oauth
      ? { RELAY_SHELL_AUTH_ENABLED: "true", RELAY_SHELL_AUTH_ISSUER: `http://127.0.0.1:${listen}` }
      : {}),
    ...settings,
  };
  // Distinct ports: a port freed a moment ago can be handed out again.
  const ports: number[] = [];
  while (ports.length < RELAY_NAMES.length) {
    const port = await freePort();
    if (!ports.includes(port) && port !== listen) ports.push(port);
  }
  // One after the other: the first applies the schema, the others find it done (they would wait on the lock anyway).
  const relays: FleetRelay[] = [];
  for (const [i, name] of RELAY_NAMES.entries())
    relays.push(await startRelay(world, name, ports[i] ?? 0, shared));
  const haproxy = await startHaproxy(listen, relays);
  const byName = (name: string): FleetRelay => {
    const found = relays.find((r) => r.name === name);
    if (!found) throw new Error(`no relay ${name}`);
    return found;
  };
  const fleet: RelayFleet = {
    relays,
    base: `http://127.0.0.1:${listen}`,
    relay: byName,
    async restart(name) {
      const old = byName(name);
      const fresh = await startRelay(world, name, old.port, shared);
      relays[relays.indexOf(old)] = fresh;
      return fresh;
    },
    async kill(name) {
      const relay = byName(name);
      if (relay.child.exitCode !== null || relay.child.signalCode !== null) return;
      const exited = new Promise((r) => relay.child.once("exit", r));
      // The relay is runuser's child: SIGKILL it, not runuser (which would leave it running).
      for (const pid of childrenOf(relay.child.pid ?? 0)) process.kill(pid, "SIGKILL");
      await exited;
    },
    async waitHealth(names, up) {
      // HAProxy's view is what matters; asking each relay directly is the same check it makes.
      for (let i = 0; i < 100; i += 1) {
        const states = await Promise.all(
          names.map((n) =>
            fetch(`http://127.0.0.1:${byName(n).port}/healthz`).then(
              (r) => r.status === 200,
              () => false,
            ),
          ),
        );
        if (states.every((s) => s === up)) {
          // Two checks a second apart make HAProxy change its mind (fall 2 / rise 2).
          await new Promise((r) => setTimeout(r, 2500));
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`relays ${names.join(", ")} did not become ${up ? "healthy" : "unhealthy"}`);
    },
    async stop() {
      haproxy.kill("SIGTERM");
      for (const relay of relays) {
        if (relay.child.exitCode === null && relay.child.signalCode === null) {
          const exited = new Promise((r) => relay.child.once("exit", r));
          relay.child.kill("SIGTERM");
          await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
          relay.child.kill("SIGKILL");
        }
      }
    },
  };
  return fleet;
}

/** An MCP client through the balancer (a new MCP session, placed by HAProxy). */
export async function connectThrough(
  base: string,
  headers: Record<string, string> = {},
): Promise<FleetClient> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } });
  const client = new Client({ name: "fleet-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    transport,
    holder: () => /\.([a-z0-9-]+)$/.exec(transport.sessionId ?? "")?.[1] ?? "",
    async call(name, args = {}) {
      const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
      const content = result.content as Array<{ type: string; text?: string }>;
      return { text: content.map((c) => c.text ?? "").join(""), isError: result.isError === true };
    },
    close: () => client.close(),
  };
}

/** Every record of a relay's audit log. */
export function auditRecords(path: string): Array<Record<string, unknown>> {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
