import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeSettings, loadSettings } from "../src/config/index.js";
import { REPO_ROOT } from "./helpers/server.js";

/** The configuration reference is checked against the schema so the two cannot drift. */
describe("docs/configuration.md", () => {
  const doc = readFileSync(join(REPO_ROOT, "docs", "configuration.md"), "utf8");
  const rows = new Map<string, string>();
  for (const match of doc.matchAll(/^\| `(RELAY_SHELL_[A-Z0-9_]+)` \| ([^|]+) \|/gm)) {
    rows.set(match[1] ?? "", (match[2] ?? "").trim());
  }
  const defaults = describeSettings(loadSettings({}, { cwd: "/tmp", homeDir: "/home/op" }));

  it("documents every setting the schema knows, and no other", () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(defaults).sort());
  });

  it("shows each setting's real default", () => {
    for (const [name, value] of Object.entries(defaults)) {
      const cell = rows.get(name) ?? "";
      if (value === null || value === "") expect(cell, name).toBe("(none)");
      else if (typeof value === "string" && value.startsWith("/home/op/.local/state/relay-shell/")) {
        expect(cell, name).toBe(`\`<state>/${value.slice("/home/op/.local/state/relay-shell/".length)}\``);
      } else if (typeof value === "string" && value.startsWith("/home/op/")) {
        expect(cell, name).toBe(`\`~/${value.slice("/home/op/".length)}\``);
      } else expect(cell, name).toBe(`\`${String(value)}\``);
    }
  });
});
