import { execFileSync } from "node:child_process";
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
      expect(found.ok && found.value.bytes.toString()).toBe(KEY);
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
        error: `the key ${path} has mode 0${mode.toString(8)}; only 0600 or 0400, or 0440 with systemd's credential ACL, is accepted`,
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
    expect(found.ok || found.error).toMatch(/key directory .* is writable by group or others/);
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
      error: `no key for credential backup-key: ${join(empty, "backup-key")} not found`,
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
    expect(found.ok || found.error).toMatch(/more than the 16384 accepted/);
  });
});

const SETFACL = "/usr/bin/setfacl";
const ACL_SKIP = uid !== 0 || !existsSync(SETFACL);
if (ACL_SKIP)
  process.stderr.write("[skipped] credential ACL cases: need root and setfacl (apt-get install acl)\n");

describe.skipIf(ACL_SKIP)("readCredential and systemd's credential ACL", () => {
  /** The daemon's uid in these cases: not root, not the file's owner. */
  const daemon = 4242;

  /** A root-owned 0400 key, then `setfacl -m <spec>` for each spec, as systemd's LoadCredential= does for one. */
  function aclKey(...specs: string[]): { dir: string; path: string; mode: number } {
    const { dir, path } = keyDir(0o400, 0o500);
    for (const spec of specs) execFileSync(SETFACL, ["-m", spec, path]);
    return { dir, path, mode: statSync(path).mode & 0o7777 };
  }

  const read = (dir: string) =>
    readCredential("backup-key", { credentialsDirectory: dir, keyFileDirectory: null, daemonUid: daemon });

  it("accepts the key as systemd hands it over: root 0400 plus user:<daemon>:r, shown as 0440", () => {
    const { dir, mode } = aclKey(`u:${daemon}:r`);
    expect(mode).toBe(0o440);
    const found = read(dir);
    expect(found.ok && found.value.bytes.toString()).toBe(KEY);
  });

  it.each([
    ["another user", ["u:4243:r"]],
    ["a second named user", [`u:${daemon}:r`, "u:4243:r"]],
    ["a named group", [`u:${daemon}:r`, "g:4242:r"]],
    ["write for the daemon", [`u:${daemon}:rw`]],
    ["execute for the daemon", [`u:${daemon}:rx`]],
    ["group read", [`u:${daemon}:r`, "g::r"]],
    ["other read", [`u:${daemon}:r`, "o::r"]],
    ["write for the owner", [`u:${daemon}:r`, "u::rw"]],
  ])("refuses an ACL with %s, naming the ACL", (_what, specs) => {
    const { dir, path } = aclKey(...specs);
    const found = read(dir);
    expect(found.ok).toBe(false);
    expect(found.ok || found.error).toContain(`the key ${path} has mode`);
    expect(found.ok || found.error).not.toContain("OPENSSH");
  });

  it("refuses 0440 without an ACL: its group may read it", () => {
    const { dir, path } = keyDir(0o440, 0o500);
    expect(read(dir)).toEqual({
      ok: false,
      error: `the key ${path} has mode 0440 and no ACL, so its group may read it; only 0600 or 0400, or 0440 with systemd's credential ACL, is accepted`,
    });
  });

  it("names the ACL it refuses", () => {
    const { dir, path } = aclKey("u:4243:r");
    expect(read(dir)).toEqual({
      ok: false,
      error: `the key ${path} has mode 0440 with the ACL user::r--,user:4243:r--,group::---,mask::r--,other::---; only user::r--,user:${daemon}:r--,group::---,mask::r--,other::--- (systemd's credential ACL for the daemon's uid alone) is accepted`,
    });
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
