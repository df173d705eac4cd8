import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_KEY_BYTES, readCredential, sweepKeyFiles, withKeyFile } from "./credentials.js";

const root = mkdtempSync(join(tmpdir(), "relay-credentials-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const KEY =
  "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcy1mb3ItdGhlLXRlc3Q=\n-----END OPENSSH PRIVATE KEY-----\n";
let n = 0;

function keyDir(mode = 0o600, dirMode = 0o700): { dir: string; path: string } {
  const dir = join(root, `keys-${n++}`);
  mkdirSync(dir, { mode: dirMode });
  chmodSync(dir, dirMode);
  const path = join(dir, "backup-key");
  writeFileSync(path, KEY, { mode });
  chmodSync(path, mode);
  return { dir, path };
}

const uid = process.geteuid?.() ?? 0;

describe("readCredential", () => {
  it("reads a 0600 or 0400 key from the credentials directory", () => {
    for (const mode of [0o600, 0o400]) {
      const { dir } = keyDir(mode);
      const found = readCredential("backup-key", {
        credentialsDirectory: dir,
        keyFileDirectory: null,
        daemonUid: uid,
      });
      expect(found.ok && found.bytes.toString()).toBe(KEY);
    }
  });

  it.each([0o640, 0o604, 0o644, 0o700, 0o660])(
    "refuses mode %s, naming the path and mode, never the bytes",
    (mode) => {
      const { dir, path } = keyDir(mode);
      const found = readCredential("backup-key", {
        credentialsDirectory: dir,
        keyFileDirectory: null,
        daemonUid: uid,
      });
      expect(found).toEqual({
        ok: false,
        message: `the key ${path} has mode 0${mode.toString(8)}; only 0600 or 0400 is accepted`,
      });
    },
  );

  it("refuses a key in a directory others may write", () => {
    const { dir } = keyDir(0o600, 0o777);
    const found = readCredential("backup-key", {
      credentialsDirectory: dir,
      keyFileDirectory: null,
      daemonUid: uid,
    });
    expect(found.ok || found.message).toMatch(/key directory .* is writable by group or others/);
  });

  it("falls back to the key file directory only when it is given", () => {
    const empty = join(root, `empty-${n++}`);
    mkdirSync(empty, { mode: 0o700 });
    const { dir } = keyDir();
    const without = readCredential("backup-key", {
      credentialsDirectory: empty,
      keyFileDirectory: null,
      daemonUid: uid,
    });
    expect(without).toEqual({
      ok: false,
      message: `no key for credential backup-key: ${join(empty, "backup-key")} not found`,
    });
    const withFallback = readCredential("backup-key", {
      credentialsDirectory: empty,
      keyFileDirectory: dir,
      daemonUid: uid,
    });
    expect(withFallback.ok).toBe(true);
  });

  it("refuses a file too large to be a key", () => {
    const { dir, path } = keyDir();
    writeFileSync(path, "x".repeat(MAX_KEY_BYTES + 1));
    const found = readCredential("backup-key", {
      credentialsDirectory: dir,
      keyFileDirectory: null,
      daemonUid: uid,
    });
    expect(found.ok || found.message).toMatch(/more than the 16384 accepted/);
  });
});

describe("withKeyFile", () => {
  it("hands over a 0600 file in a 0700 directory, clears the caller's copy and removes the directory", async () => {
    const state = mkdtempSync(join(root, "state-"));
    const bytes = Buffer.from(KEY);
    const seen = await withKeyFile(state, bytes, async ({ keyFile, home }) => {
      expect(dirname(keyFile)).toBe(home);
      return {
        content: readFileSync(keyFile, "utf8"),
        fileMode: statSync(keyFile).mode & 0o777,
        dirMode: statSync(home).mode & 0o777,
      };
    });
    expect(seen).toEqual({ content: KEY, fileMode: 0o600, dirMode: 0o700 });
    expect(bytes.every((b) => b === 0)).toBe(true);
    expect(readdirSync(state)).toEqual([]);
  });

  it("removes the key when the work fails", async () => {
    const state = mkdtempSync(join(root, "state-"));
    let home = "";
    await expect(
      withKeyFile(state, Buffer.from(KEY), async (paths) => {
        home = paths.home;
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(existsSync(home)).toBe(false);
    expect(readdirSync(state)).toEqual([]);
  });
});

describe("sweepKeyFiles", () => {
  it("removes what a crashed run left and nothing else", () => {
    const state = mkdtempSync(join(root, "state-"));
    mkdirSync(join(state, ".ssh-home-abc123"));
    writeFileSync(join(state, ".ssh-home-abc123", "id"), KEY);
    mkdirSync(join(state, "snapshots"));
    sweepKeyFiles(state);
    expect(readdirSync(state)).toEqual(["snapshots"]);
  });

  it("accepts a state directory that does not exist yet", () => {
    expect(() => sweepKeyFiles(join(root, "not-yet"))).not.toThrow();
  });
});
