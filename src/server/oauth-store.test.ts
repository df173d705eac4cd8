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
import { type ClientRecord, type CodeRecord, OAuthStateError, type TokenRecord } from "./oauth-state.js";
import { ensurePrivateDir, openOAuthStore } from "./oauth-store.js";

const mode = (path: string) => statSync(path).mode & 0o777;
const TOKEN: TokenRecord = { kind: "access", client_id: "c", scopes: ["mcp:tools"], expires_at: 9 };
const CODE: CodeRecord = {
  client_id: "c",
  scopes: ["mcp:tools"],
  expires_at: 9,
  code_challenge: "x".repeat(43),
  redirect_uri: "http://127.0.0.1:1/cb",
  redirect_uri_explicit: false,
};
const CLIENT: ClientRecord = {
  client_id: "c",
  client_id_issued_at: 1,
  redirect_uris: ["http://127.0.0.1:1/cb"],
  token_endpoint_auth_method: "none",
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
};

describe("OAuth state store", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "relay-shell-oauth-store-"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("creates the state dir 0700 and writes every file 0600, atomically", async () => {
    const dir = join(root, "a", "oauth");
    const store = openOAuthStore(dir, silentLogger);
    expect(mode(dir)).toBe(0o700);
    // A stale temp file with loose permissions is replaced, not reused.
    writeFileSync(join(dir, "tokens.json.tmp"), "junk", { mode: 0o644 });
    await store.saveTokens([{ digest: "a".repeat(64), record: TOKEN }]);
    await store.saveCode("b".repeat(64), CODE);
    await store.registerClient(CLIENT, true);
    for (const file of ["clients.json", "codes.json", "tokens.json"])
      expect(mode(join(dir, file)), file).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, "tokens.json"), "utf8"))).toHaveProperty(
      `access:${"a".repeat(64)}`,
    );
    expect(() => statSync(join(dir, "tokens.json.tmp"))).toThrow();
    // The on-disk format: clients by id, codes by digest, tokens by kind and digest.
    expect(Object.keys(JSON.parse(readFileSync(join(dir, "codes.json"), "utf8")))).toEqual(["b".repeat(64)]);
    expect(JSON.parse(readFileSync(join(dir, "clients.json"), "utf8"))).toEqual({ c: CLIENT });
  });

  it("rejects with an OAuthStateError when a file cannot be written", async () => {
    const dir = join(root, "blocked");
    const store = openOAuthStore(dir, silentLogger);
    mkdirSync(join(dir, "tokens.json.tmp"));
    const write = store.saveTokens([{ digest: "a".repeat(64), record: TOKEN }]);
    await expect(write).rejects.toBeInstanceOf(OAuthStateError);
    await expect(write).rejects.toThrow(/tokens\.json could not be written/);
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

  it("reads damaged code and token files as empty but refuses a damaged clients file", async () => {
    const dir = join(root, "damaged");
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, "tokens.json"), "{not json");
    const good = "c".repeat(64);
    writeFileSync(
      join(dir, "codes.json"),
      JSON.stringify({ short: CODE, [good]: { client_id: "x" }, ["d".repeat(64)]: CODE }),
    );
    const store = openOAuthStore(dir, silentLogger);
    expect(await store.sweep(0)).toEqual({ codes: 0, tokens: 0 });
    expect(await store.takeCode(good)).toBeUndefined();
    expect(await store.takeCode("d".repeat(64))).toEqual(CODE);
    expect(await store.sweep(Number.MAX_SAFE_INTEGER)).toEqual({ codes: 0, tokens: 0 });
    writeFileSync(join(dir, "clients.json"), "[1,2]");
    expect(() => openOAuthStore(dir, silentLogger)).toThrow(/malformed/);
    writeFileSync(join(dir, "clients.json"), JSON.stringify({ id: { client_id: "other" } }));
    expect(() => openOAuthStore(dir, silentLogger)).toThrow(/malformed entry/);
  });
});
