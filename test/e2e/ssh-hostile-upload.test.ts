import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

announceSkip("remote symlinks and transfer bounds suite");

/**
 * A remote side that changed between two uploads: what was a file or a
 * directory is now a symlink pointing elsewhere. The upload must refuse
 * rather than write where the link points. Every target is a canary in the
 * fixture's own directory. The transfer bounds hold for an honest server too.
 */
describe.skipIf(SSHD_MISSING)("transfers against real sshd: remote symlinks and bounds", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let s: TestServer;
  let local: string;
  let remote: string;
  let elsewhere: string;

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({ web: { hostname: "127.0.0.1", port: sshd.port, user: fx.user } }),
    );
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "relay_known_hosts"),
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      // Small bounds, so that crossing them costs this suite nothing; the symlink cases stay far below.
      RELAY_SHELL_TRANSFER_MAX_BYTES: String(2 ** 20),
      RELAY_SHELL_TRANSFER_MAX_ENTRIES: "40",
    });
    local = join(fx.dir, "local");
    mkdirSync(local);
    // The remote side is this machine as the SSH user: directories it may write.
    remote = join(fx.dir, "remote");
    elsewhere = join(fx.dir, "elsewhere");
    for (const d of [remote, elsewhere]) {
      mkdirSync(d);
      chmodSync(d, 0o777);
    }
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("refuses to re-upload a file over a symlink that replaced it, leaving the link's target alone", async () => {
    const file = join(local, "app.conf");
    writeFileSync(file, "new content\n");
    const first = await s.call("ssh_upload", { host: "web", local_path: file, remote_path: remote });
    expect(first.text).toBe(`uploaded ${file} -> web:${remote}`);

    const canary = join(elsewhere, "canary.conf");
    writeFileSync(canary, "canary\n");
    chmodSync(canary, 0o666);
    rmSync(join(remote, "app.conf"));
    symlinkSync(canary, join(remote, "app.conf"));

    // Into the directory, and naming the link itself as the destination.
    for (const remotePath of [remote, join(remote, "app.conf")]) {
      const r = await s.call("ssh_upload", { host: "web", local_path: file, remote_path: remotePath });
      expect(r.text).toBe(
        `[ERROR: FileExistsError: web:${remote}/app.conf is a symlink; not writing a file through it]`,
      );
    }
    expect(readFileSync(canary, "utf8")).toBe("canary\n");
    expect(lstatSync(canary).mode & 0o777).toBe(0o666);
    expect(readlinkSync(join(remote, "app.conf"))).toBe(canary);
  });

  it("refuses to merge a tree into a symlink that replaced its directory", async () => {
    const tree = join(local, "site");
    mkdirSync(join(tree, "assets"), { recursive: true });
    writeFileSync(join(tree, "index.html"), "<p>hi</p>\n");
    writeFileSync(join(tree, "assets", "app.js"), "run()\n");
    const first = await s.call("ssh_upload", {
      host: "web",
      local_path: tree,
      remote_path: remote,
      recursive: true,
    });
    expect(first.text).toBe(`uploaded ${tree} -> web:${remote}`);

    // The whole directory becomes a link.
    const target = join(elsewhere, "site-target");
    mkdirSync(target);
    chmodSync(target, 0o777);
    renameSync(join(remote, "site"), join(fx.dir, "site-old"));
    symlinkSync(target, join(remote, "site"));
    const r = await s.call("ssh_upload", {
      host: "web",
      local_path: tree,
      remote_path: remote,
      recursive: true,
    });
    expect(r.text).toBe(
      `[ERROR: NotADirectoryError: web:${remote}/site is a symlink; not copying a tree into it]`,
    );
    expect(readdirSync(target)).toEqual([]);

    // A directory inside the tree becomes a link.
    rmSync(join(remote, "site"));
    renameSync(join(fx.dir, "site-old"), join(remote, "site"));
    const assetsTarget = join(elsewhere, "assets-target");
    mkdirSync(assetsTarget);
    chmodSync(assetsTarget, 0o777);
    rmSync(join(remote, "site", "assets"), { recursive: true });
    symlinkSync(assetsTarget, join(remote, "site", "assets"));
    const nested = await s.call("ssh_upload", {
      host: "web",
      local_path: tree,
      remote_path: remote,
      recursive: true,
    });
    expect(nested.text).toBe(
      `[ERROR: NotADirectoryError: web:${remote}/site/assets is a symlink; not copying a tree into it; ` +
        "copied so far: 1 file (10 bytes), 1 directory, 0 symlinks]",
    );
    expect(readdirSync(assetsTarget)).toEqual([]);
  });

  it("follows a remote_path the caller named that is a link to a directory, as cp does", async () => {
    const real = join(remote, "real-dir");
    mkdirSync(real);
    chmodSync(real, 0o777);
    symlinkSync(real, join(remote, "named-link"));
    const file = join(local, "named.txt");
    writeFileSync(file, "named\n");
    const r = await s.call("ssh_upload", {
      host: "web",
      local_path: file,
      remote_path: join(remote, "named-link"),
    });
    expect(r.text).toBe(`uploaded ${file} -> web:${remote}/named-link`);
    expect(readFileSync(join(real, "named.txt"), "utf8")).toBe("named\n");
  });

  it("still replaces a regular file in place and recreates links as links", async () => {
    const file = join(local, "plain.txt");
    writeFileSync(file, "one\n");
    await s.call("ssh_upload", { host: "web", local_path: file, remote_path: remote });
    writeFileSync(file, "two, longer\n");
    chmodSync(file, 0o600);
    const r = await s.call("ssh_upload", { host: "web", local_path: file, remote_path: remote });
    expect(r.text).toBe(`uploaded ${file} -> web:${remote}`);
    expect(readFileSync(join(remote, "plain.txt"), "utf8")).toBe("two, longer\n");
    expect(lstatSync(join(remote, "plain.txt")).mode & 0o777).toBe(0o600);
  });

  it("bounds uploads and downloads of an honest server too, removing nothing that was whole", async () => {
    const big = join(local, "big.bin");
    writeFileSync(big, Buffer.alloc(2 ** 20 + 1));
    const up = await s.call("ssh_upload", { host: "web", local_path: big, remote_path: remote });
    expect(up.text).toBe(
      `[ERROR: TransferLimitError: ${big} is ${2 ** 20 + 1} bytes, over the ${2 ** 20} bytes one transfer may ` +
        "move (RELAY_SHELL_TRANSFER_MAX_BYTES); it was not copied and the transfer was stopped]",
    );
    expect(readdirSync(remote)).not.toContain("big.bin");

    // A tree whose second file does not fit in what the first left.
    const pair = join(remote, "pair");
    mkdirSync(pair);
    writeFileSync(join(pair, "a.bin"), Buffer.alloc(600_000));
    writeFileSync(join(pair, "b.bin"), Buffer.alloc(600_000));
    const dest = join(local, "pair-copy");
    const down = await s.call("ssh_download", {
      host: "web",
      remote_path: pair,
      local_path: dest,
      recursive: true,
    });
    expect(down.text).toBe(
      `[ERROR: TransferLimitError: web:${pair}/b.bin is 600000 bytes after 600000 bytes of earlier files, over ` +
        `the ${2 ** 20} bytes one transfer may move (RELAY_SHELL_TRANSFER_MAX_BYTES); it was not copied and the ` +
        "transfer was stopped; copied so far: 1 file (600000 bytes), 1 directory, 0 symlinks]",
    );
    expect(readdirSync(dest)).toEqual(["a.bin"]);

    // The tree's own directory is the first of the 40 entries, so the 40th file is one too many.
    const many = join(local, "many");
    mkdirSync(many);
    for (let i = 0; i < 45; i++) writeFileSync(join(many, `f${String(i).padStart(2, "0")}`), "x");
    const tree = await s.call("ssh_upload", {
      host: "web",
      local_path: many,
      remote_path: remote,
      recursive: true,
    });
    expect(tree.text).toBe(
      `[ERROR: TransferLimitError: more than 40 directory entries (RELAY_SHELL_TRANSFER_MAX_ENTRIES) at ` +
        `${many}/f39; the transfer was stopped; copied so far: 39 files (39 bytes), 1 directory, 0 symlinks]`,
    );
  });
});
