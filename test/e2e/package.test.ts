import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseEnv, REPO_ROOT } from "../helpers/server.js";

/**
 * The package as `npm pack` makes it (package.json `files`): what runs and nothing beside it, and
 * it runs. Unpacked with the repository's node_modules beside it (the dependencies `npm install`
 * would bring), the server starts from it and runs a command through the launcher it ships.
 */
describe("the packed package", () => {
  let dir: string;
  let files: string[];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "relay-package-"));
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", dir], {
        cwd: REPO_ROOT,
        encoding: "utf8",
      }),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const tarball = packed[0]?.filename ?? "";
    files = (packed[0]?.files ?? []).map((f) => f.path);
    execFileSync("tar", ["-xzf", join(dir, tarball), "-C", dir]);
    symlinkSync(join(REPO_ROOT, "node_modules"), join(dir, "package", "node_modules"));
  }, 60_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("ships the bundle, its chunks, the launcher and their source maps, and no other compiled module", () => {
    const compiled = files.filter((f) => f.startsWith("dist/"));
    for (const file of compiled) {
      expect(file, file).toMatch(/^dist\/(cli\/(main|bundle-[A-Z0-9]+)|exec\/launcher)\.js(\.map)?$/);
    }
    expect(compiled).toContain("dist/cli/main.js");
    expect(compiled).toContain("dist/cli/main.js.map");
    expect(compiled).toContain("dist/exec/launcher.js");
    // Every chunk has its map, and the maps name the sources they came from.
    for (const chunk of compiled.filter((f) => f.endsWith(".js"))) expect(compiled).toContain(`${chunk}.map`);
    const map = JSON.parse(readFileSync(join(dir, "package", "dist", "cli", "main.js.map"), "utf8")) as {
      sources: string[];
    };
    expect(map.sources).toContain("../../src/cli/main.ts");
  });

  it("starts from the package and runs a command through the launcher it ships", async () => {
    const work = mkdtempSync(join(tmpdir(), "relay-package-run-"));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(dir, "package", "dist", "cli", "main.js")],
      env: baseEnv({
        RELAY_SHELL_AUDIT_PATH: join(work, "audit.jsonl"),
        XDG_STATE_HOME: join(work, "state"),
      }),
      cwd: work,
      stderr: "pipe",
    });
    const client = new Client({ name: "package-test", version: "1" });
    try {
      await client.connect(transport);
      const ran = await client.callTool({ name: "shell_exec", arguments: { command: "echo packaged" } });
      expect((ran.content as Array<{ text: string }>)[0]?.text).toBe("[exit 0]\npackaged\n");
      const info = await client.callTool({ name: "server_info", arguments: {} });
      const runtime = JSON.parse((info.content as Array<{ text: string }>)[0]?.text ?? "{}").runtime;
      // The native launcher is built on the host, never shipped: the package's own launcher serves.
      expect(runtime.launcher).toBe("node");
    } finally {
      await client.close();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
