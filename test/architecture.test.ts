import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/server.js";

/**
 * The dependency rules of docs/architecture.md, checked on the import lines so they
 * cannot rot: arrows point down, capabilities do not import each other, and
 * another folder is reached only through its index.
 */
/** What tools/ may use, and with tools/ and server/ added, what cli/ wires. */
const BELOW_TOOLS = [
  "core",
  "state",
  "files",
  "config",
  "metrics",
  "proc",
  "policy",
  "audit",
  "exec",
  "sessions",
  "ssh",
  "infra-protocol",
  "sshsig",
  "consent",
  "broker",
  "runner",
] as const;

const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  files: ["core"],
  config: ["core", "files"],
  metrics: ["core"],
  proc: ["core"],
  policy: ["core", "config"],
  audit: ["core", "config", "files"],
  exec: ["core", "config", "proc"],
  sessions: ["core", "config", "proc"],
  ssh: ["core", "config", "files"],
  "infra-protocol": ["core"],
  // OpenSSH signatures and allowed-signers files: pure parsing and node:crypto.
  sshsig: ["core"],
  // The state several relays share: the PostgreSQL pool, its transactions and the schema's migrations.
  state: ["core", "config"],
  // Transactional consent: the store, the signed payload, the description of an act.
  consent: ["core", "config", "files", "proc", "sshsig", "state"],
  // The INFRA-1 broker daemon: a second program, wired by cli/ only; tools reach it through infra-protocol.
  infra: ["core", "config", "files", "proc", "audit", "exec", "infra-protocol", "sshsig", "consent"],
  broker: ["core", "config", "policy", "audit", "state"],
  runner: ["core", "config", "metrics", "policy", "audit", "broker", "consent"],
  tools: BELOW_TOOLS,
  server: ["core", "config", "metrics", "runner", "tools", "state"],
  // The operator console: an edge beside server/, reading what the relay writes; only cli/ wires it.
  console: ["core", "config", "files", "audit", "consent", "sessions", "metrics", "state"],
  cli: [...BELOW_TOOLS, "tools", "server", "infra", "consent", "console"],
};

const SRC = join(REPO_ROOT, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1] ?? "");
}

describe("architecture", () => {
  const files = sourceFiles(SRC);

  it("every src folder is a known layer", () => {
    const folders = new Set(files.map((f) => relative(SRC, f).split("/")[0]));
    for (const folder of folders) expect(Object.keys(ALLOWED)).toContain(folder);
  });

  it("imports point down the layer list and go through a folder's index", () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = relative(SRC, file).split("/")[0] ?? "";
      for (const spec of importsOf(file)) {
        if (!spec.startsWith(".")) continue;
        // Resolved from the importing file, so that a module in a subfolder (policy/engine/) is
        // judged by the folder it reaches, not by the `../` its path needs.
        const [to = "", ...parts] = relative(SRC, resolve(dirname(file), spec)).split("/");
        if (to === from || to === "..") continue;
        const rest = parts.join("/");
        if (!ALLOWED[from]?.includes(to)) violations.push(`${relative(REPO_ROOT, file)}: ${from} -> ${to}`);
        if (rest !== "index.js") violations.push(`${relative(REPO_ROOT, file)}: reaches into ${to}/${rest}`);
      }
    }
    expect(violations).toEqual([]);
  });

  // console.* in src/ is refused by the linter (biome suspicious/noConsole).
  it("only src/config reads process.env and only exec/sessions spawn processes", () => {
    const violations: string[] = [];
    for (const file of files) {
      const folder = relative(SRC, file).split("/")[0];
      const text = readFileSync(file, "utf8");
      if (folder !== "config" && /process\.env\b/.test(text)) violations.push(`${file}: process.env`);
      if (folder !== "exec" && folder !== "sessions" && /\b(spawn|execFile|fork)(Sync)?\(/.test(text)) {
        violations.push(`${file}: process creation`);
      }
    }
    expect(violations).toEqual([]);
  });
});
