import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const dir = mkdtempSync(join(tmpdir(), "diag-"));
const port = 18990 + Math.floor(Math.random() * 100);
const child = spawn(process.execPath, [...(process.env.NODEFLAGS ? process.env.NODEFLAGS.split(" ") : []), "/work/main/dist/cli/main.js"], { env: { PATH: process.env.PATH, HOME: dir, RELAY_SHELL_TRANSPORT: "http", RELAY_SHELL_HTTP_PORT: String(port), RELAY_SHELL_AUDIT_PATH: join(dir, "a.jsonl") }, stdio: ["ignore", "ignore", "pipe"] });
await new Promise<void>((r) => { let s = ""; child.stderr!.on("data", (c) => { s += c; if (s.includes('"serving"')) r(); }); });
child.stderr!.resume();
const base = `http://127.0.0.1:${port}`;
const mem = async (label: string) => {
  const t = await (await fetch(`${base}/metrics`)).text();
  const g = (n: string) => (Number(/^(\S+) (\S+)$/m.exec(t.split("\n").filter((l) => l.startsWith(n + " "))[0] ?? "")?.[2] ?? 0) / 2 ** 20).toFixed(1);
  console.log(label, "rss", g("process_resident_memory_bytes"), "heapUsed", g("nodejs_heap_size_used_bytes"), "heapTotal", g("nodejs_heap_size_total_bytes"), "external", g("nodejs_external_memory_bytes"));
};
const clients: Client[] = [];
for (let i = 0; i < 64; i++) { const c = new Client({ name: "d", version: "1" }); await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`))); clients.push(c); }
await Promise.all(clients.map((c) => c.callTool({ name: "shell_exec", arguments: { command: "true" } })));
await mem("warm");
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++) {
  await Promise.all(clients.map(async (c) => { for (let i = 0; i < 200; i++) await c.callTool({ name: "shell_exec", arguments: { command: "true" } }); }));
  await mem(`round${round}`);
  await new Promise((r) => setTimeout(r, 3000)); await mem("  idle3s");
}
child.kill();
process.exit(0);
