import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostileSsh, startHostileSsh } from "../fixtures/hostile-ssh.js";
import { startServer, type TestServer } from "../helpers/server.js";

/** Every C0 and C1 control character and DEL: none may reach the caller from a server's text. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

describe("ssh_download against an SFTP server that lies", () => {
  let dir: string;
  let hostile: HostileSsh;
  let s: TestServer;
  let local: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-hostile-"));
    hostile = await startHostileSsh(dir);
    const inventory = join(dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({ evil: { hostname: "127.0.0.1", port: hostile.port, user: "op" } }),
    );
    // The relay meets this host as any other: inventory entry, accept-new, its own known_hosts file.
    env = {
      HOME: hostile.home,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(dir, "relay_known_hosts"),
      RELAY_SHELL_UNSAFE_NOTICES: "false",
    };
    // Default bounds: what an operator who sets nothing gets.
    s = await startServer(env);
    local = join(dir, "local");
    mkdirSync(local);
  });
  afterAll(async () => {
    await s?.close();
    await hostile?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("stops an endless directory listing at the entry bound, with a clear error and not a timeout", async () => {
    const dest = join(local, "endless");
    const started = Date.now();
    const r = await s.call("ssh_download", {
      host: "evil",
      remote_path: "/endless",
      local_path: dest,
      recursive: true,
    });
    expect(r.text).toBe(
      "[ERROR: TransferLimitError: more than 100000 directory entries (RELAY_SHELL_TRANSFER_MAX_ENTRIES) at " +
        "evil:/endless; the transfer was stopped; copied so far: 0 files (0 bytes), 1 directory, 0 symlinks]",
    );
    // 100 names per reply: the listing was read up to the bound and no further.
    expect(hostile.readdirs()).toBeGreaterThanOrEqual(1000);
    expect(hostile.readdirs()).toBeLessThanOrEqual(1001);
    expect(Date.now() - started).toBeLessThan(60_000);
    // Nothing of the listing was written.
    expect(readdirSync(dest)).toEqual([]);
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_download", denied: false, exit_code: null });
  });

  it("refuses a file that claims more bytes than a transfer may move, before writing any", async () => {
    const dest = join(local, "huge.bin");
    const r = await s.call("ssh_download", { host: "evil", remote_path: "/huge.bin", local_path: dest });
    expect(r.text).toBe(
      `[ERROR: TransferLimitError: evil:/huge.bin is ${2 ** 50} bytes, over the 4294967296 bytes one transfer ` +
        "may move (RELAY_SHELL_TRANSFER_MAX_BYTES); it was not copied and the transfer was stopped]",
    );
    expect(existsSync(dest)).toBe(false);
    expect(hostile.bytesServed()).toBe(0);
  });

  it("stops a tree that never ends in depth", async () => {
    const dest = join(local, "deep");
    const r = await s.call("ssh_download", {
      host: "evil",
      remote_path: "/deep",
      local_path: dest,
      recursive: true,
    });
    expect(r.text).toMatch(
      /^\[ERROR: TransferLimitError: evil:\/deep(\/d){129} is more than 128 directories deep; the transfer was stopped; copied so far: 0 files \(0 bytes\), 129 directories, 0 symlinks\]$/,
    );
  });

  it("skips and reports entry names with a NUL byte or a slash, and copies the rest", async () => {
    const dest = join(local, "names");
    const r = await s.call("ssh_download", {
      host: "evil",
      remote_path: "/names",
      local_path: dest,
      recursive: true,
    });
    expect(r.text).toBe(`downloaded evil:/names -> ${dest}`);
    expect(r.structured).toMatchObject({
      files: 2,
      directories: 1,
      skipped: ["evil:/names/bad\\x00name", "evil:/names/a/b"],
    });
    expect(readdirSync(dest).sort()).toEqual(["good.txt", "other.txt"]);
    expect(readFileSync(join(dest, "good.txt"), "utf8")).toBe("hello\n");
  });

  it.each([
    [
      "a failed open",
      { remote_path: "/loud.txt", local_path: "loud.txt" },
      "download evil:/loud.txt failed: ",
    ],
    [
      "a failed listing",
      { remote_path: "/loud-dir", local_path: "loud-dir", recursive: true },
      "readdir evil:/loud-dir failed: ",
    ],
  ])("bounds and cleans a 250,000-byte error message of %s", async (_label, args, prefix) => {
    const r = await s.call("ssh_download", {
      host: "evil",
      ...args,
      local_path: join(local, args.local_path),
    });
    expect(r.text.startsWith(`[ERROR: SFTPError: ${prefix}`)).toBe(true);
    expect(r.text.endsWith("]")).toBe(true);
    expect(Buffer.byteLength(r.text, "utf8")).toBeLessThanOrEqual(2048);
    expect(r.text).not.toMatch(CONTROL);
    // What the server said is still there to read, without its escapes, and the cut is marked.
    expect(r.text).toContain("disk on fire");
    expect(r.text).toContain("(250000 characters)");
    expect(r.text).not.toContain("owned");
    expect(existsSync(join(local, "loud.txt"))).toBe(false);
  });

  it("gives up on a file that ends before the size it reported, and removes what was written", async () => {
    const dest = join(local, "short.bin");
    const started = Date.now();
    const r = await s.call("ssh_download", { host: "evil", remote_path: "/short.bin", local_path: dest });
    expect(r.text).toBe(
      "[ERROR: SFTPError: download evil:/short.bin failed: the server ended the file after 6 of the 1000 bytes " +
        "it reported]",
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(existsSync(dest)).toBe(false);
  });

  it("bounds a transfer with timeout=0 by RELAY_SHELL_MAX_TIMEOUT", async () => {
    const capped = await startServer({
      ...env,
      RELAY_SHELL_MAX_TIMEOUT: "2",
      RELAY_SHELL_DEFAULT_TIMEOUT: "2",
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(dir, "capped_known_hosts"),
    });
    try {
      const dest = join(local, "stall.bin");
      const started = Date.now();
      const r = await capped.call("ssh_download", {
        host: "evil",
        remote_path: "/stall.bin",
        local_path: dest,
      });
      expect(r.text).toBe(`[TIMEOUT after 2s] partial download evil:/stall.bin -> ${dest}`);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.structured).toMatchObject({ timed_out: true, files: 0 });
    } finally {
      await capped.close();
    }
  });

  it("still serves the next call on the same connection", async () => {
    const dest = join(local, "after");
    const r = await s.call("ssh_download", {
      host: "evil",
      remote_path: "/names/good.txt",
      local_path: dest,
    });
    expect(r.text).toBe(`downloaded evil:/names/good.txt -> ${dest}`);
    expect(readFileSync(dest, "utf8")).toBe("hello\n");
  });
});
