import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseEnvFile, readEnvFile } from "./env-file.js";

const root = mkdtempSync(join(tmpdir(), "relay-envfile-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const values = (text: string) =>
  Object.fromEntries([...parseEnvFile(text, ".env").values].map(([k, v]) => [k, v.value]));

describe("parseEnvFile", () => {
  it("reads KEY=VALUE lines with comments, export and quotes", () => {
    const text = [
      "\uFEFF# comment",
      "",
      "RELAY_SHELL_A=plain value   # trailing comment",
      "export RELAY_SHELL_B='single # kept \\n literal'",
      'RELAY_SHELL_C="double\\tescaped \\"q\\" \\\\ \\s kept"  # comment',
      "relay_shell_d = spaced ",
      "RELAY_SHELL_E=",
      "RELAY_SHELL_F=a#b",
      "RELAY_SHELL_A=later wins",
    ].join("\r\n");
    expect(values(text)).toEqual({
      RELAY_SHELL_A: "later wins",
      RELAY_SHELL_B: "single # kept \\n literal",
      RELAY_SHELL_C: 'double\tescaped "q" \\ \\s kept',
      RELAY_SHELL_D: "spaced",
      RELAY_SHELL_E: "",
      RELAY_SHELL_F: "a#b",
    });
  });

  it("keeps only relay settings and complains only about broken relay lines", () => {
    const parsed = parseEnvFile(
      [
        "DATABASE_URL=postgres://x",
        "OTHER='broken",
        "garbage line",
        "RELAY_SHELL_X",
        'RELAY_SHELL_Y="a" b',
      ].join("\n"),
      "/w/.env",
    );
    expect([...parsed.values.keys()]).toEqual([]);
    expect(parsed.problems).toEqual([
      "/w/.env:4: cannot parse setting: expected KEY=VALUE",
      "/w/.env:5: cannot parse setting: text after the closing quote",
    ]);
  });
});

describe("readEnvFile", () => {
  it("returns nothing when there is no file", () => {
    const dir = join(root, "empty");
    mkdirSync(dir);
    expect(readEnvFile(dir)).toEqual({ path: null, values: new Map(), problems: [] });
  });

  it("reports a .env that cannot be read", () => {
    const dir = join(root, "dir");
    mkdirSync(join(dir, ".env"), { recursive: true });
    const file = readEnvFile(dir);
    expect(file.problems).toHaveLength(1);
    expect(file.problems[0]).toContain("cannot read the settings file");
  });

  it("refuses an oversized file", () => {
    const dir = join(root, "big");
    mkdirSync(dir);
    writeFileSync(join(dir, ".env"), `# ${"x".repeat(1024 * 1024)}\n`);
    expect(readEnvFile(dir).problems[0]).toMatch(/more than the 1048576 accepted$/);
  });

  it("refuses an oversized file by its size, before reading it", () => {
    // 3 GiB, sparse: a reader that takes the whole file first fails on it (or takes long) instead.
    const dir = join(root, "huge");
    mkdirSync(dir);
    const path = join(dir, ".env");
    writeFileSync(path, "");
    truncateSync(path, 3 * 1024 ** 3);
    expect(readEnvFile(dir).problems).toEqual([
      `settings file ${path} is ${3 * 1024 ** 3} bytes, more than the 1048576 accepted`,
    ]);
  });
});
