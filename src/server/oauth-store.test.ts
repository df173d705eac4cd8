import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../core/index.js";
import { ensurePrivateDir, openOAuthStore } from "./oauth-store.js";

const mode = (path: string) => statSync(path).mode & 0o777;

describe("OAuth state store", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "relay-shell-oauth-store-"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("creates the state dir 0700 and writes every file 0600, atomically", () => {
    const dir = join(root, "a", "oauth");
    const store = openOAuthStore(dir, silentLogger);
    expect(mode(dir)).toBe(0o700);
    // A stale temp file with loose permissions is replaced, not reused.
    writeFileSync(join(dir, "tokens.json.tmp"), "junk", { mode: 0o644 });
    store.tokens.set(`access:${"a".repeat(64)}`, {
      kind: "access",
      client_id: "c",
      scopes: ["mcp:tools"],
      expires_at: 9,
    });
    for (const file of ["clients", "codes", "tokens"] as const) store.save(file);
    for (const file of ["clients.json", "codes.json", "tokens.json"])
      expect(mode(join(dir, file)), file).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, "tokens.json"), "utf8"))).toHaveProperty(
      `access:${"a".repeat(64)}`,
    );
    expect(() => statSync(join(dir, "tokens.json.tmp"))).toThrow();
  });

  it("tightens a group/other-accessible dir and loose files it finds", () => {
    const dir = join(root, "loose");
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, "clients.json"), "{}", { mode: 0o644 });
    chmodSync(join(dir, "clients.json"), 0o644);
    openOAuthStore(dir, silentLogger);
    expect(mode(dir)).toBe(0o700);
    expect(mode(join(dir, "clients.json"))).toBe(0o600);
  });

  it("refuses a symlink or a file where the directory should be", () => {
    const real = join(root, "real");
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, join(root, "link"));
    expect(() => ensurePrivateDir(join(root, "link"))).toThrow(/is not a directory/);
    writeFileSync(join(root, "file"), "");
    expect(() => ensurePrivateDir(join(root, "file"))).toThrow();
  });

  it("reads damaged code and token files as empty but refuses a damaged clients file", () => {
    const dir = join(root, "damaged");
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, "tokens.json"), "{not json");
    writeFileSync(join(dir, "codes.json"), JSON.stringify({ short: { client_id: "x" } }));
    const store = openOAuthStore(dir, silentLogger);
    expect(store.tokens.size).toBe(0);
    expect(store.codes.size).toBe(0);
    writeFileSync(join(dir, "clients.json"), "[1,2]");
    expect(() => openOAuthStore(dir, silentLogger)).toThrow(/malformed/);
    writeFileSync(join(dir, "clients.json"), JSON.stringify({ id: { client_id: "other" } }));
    expect(() => openOAuthStore(dir, silentLogger)).toThrow(/malformed entry/);
  });
});
