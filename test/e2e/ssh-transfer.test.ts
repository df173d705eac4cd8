import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

announceSkip("ssh_upload / ssh_download end-to-end suite");

interface Entry {
  type: "file" | "dir" | "link";
  mode: number;
  mtime: number;
  sha256?: string;
  target?: string;
}

/** Every entry under `root` (links not followed): type, permission bits, mtime in seconds, content hash. */
function snapshot(root: string): Record<string, Entry> {
  const out: Record<string, Entry> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = lstatSync(path);
      const key = relative(root, path);
      const base = { mode: st.mode & 0o777, mtime: Math.floor(st.mtimeMs / 1000) };
      if (st.isSymbolicLink()) out[key] = { type: "link", mode: 0, mtime: 0, target: readlinkSync(path) };
      else if (st.isDirectory()) {
        out[key] = { type: "dir", ...base };
        walk(path);
      } else {
        out[key] = {
          type: "file",
          ...base,
          sha256: createHash("sha256").update(readFileSync(path)).digest("hex"),
        };
      }
    }
  };
  walk(root);
  return out;
}

describe.skipIf(SSHD_MISSING)("ssh_upload / ssh_download over stdio against real sshd", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let s: TestServer;
  let local: string;
  let remote: string;

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    const inventory = join(fx.dir, "inventory.json");
    const entry = { hostname: "127.0.0.1", port: sshd.port, user: fx.user };
    writeFileSync(
      inventory,
      JSON.stringify({ web: entry, vault: { ...entry, port: await fx.closedPort() } }),
    );
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "relay_known_hosts"),
      RELAY_SHELL_POLICY_DENY: "\\bvault\\b",
      // The texts are asserted exactly; the tier notice every mutating call carries is not this suite's subject.
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      // The timeout test moves part of a 64 GiB sparse file; the byte bound is not its subject.
      RELAY_SHELL_TRANSFER_MAX_BYTES: String(2 ** 40),
    });
    local = join(fx.dir, "local");
    mkdirSync(local);
    // The remote side is this machine as the SSH user: give it a directory it may write.
    remote = join(fx.dir, "remote");
    mkdirSync(remote);
    chmodSync(remote, 0o777);
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("round-trips a tree with modes, times, links and binary content", async () => {
    const tree = join(local, "tree");
    mkdirSync(join(tree, "sub", "deeper"), { recursive: true });
    writeFileSync(join(tree, "readme.txt"), "hello tree\n");
    writeFileSync(join(tree, "run.sh"), "#!/bin/sh\necho run\n");
    chmodSync(join(tree, "run.sh"), 0o755);
    writeFileSync(join(tree, "sub", "secret"), "top secret\n");
    chmodSync(join(tree, "sub", "secret"), 0o600);
    writeFileSync(join(tree, "sub", "empty"), "");
    // Many SFTP chunks of arbitrary bytes.
    writeFileSync(join(tree, "sub", "deeper", "blob.bin"), randomBytes(700_000));
    symlinkSync("../readme.txt", join(tree, "sub", "link"));
    chmodSync(join(tree, "sub", "deeper"), 0o750);
    for (const [i, path] of [
      "readme.txt",
      "run.sh",
      "sub/secret",
      "sub/deeper/blob.bin",
      "sub/deeper",
      "sub",
      "",
    ].entries()) {
      const when = new Date(Date.UTC(2021, 0, 1 + i, 12, 0, 0));
      utimesSync(join(tree, path), when, when);
    }

    const up = await s.call("ssh_upload", {
      host: "web",
      local_path: tree,
      remote_path: remote,
      recursive: true,
    });
    expect(up.text).toBe(`uploaded ${tree} -> web:${remote}`);
    expect(up.structured).toMatchObject({
      tool: "ssh_upload",
      tier: 2,
      files: 5,
      directories: 3,
      symlinks: 1,
      destination: `${remote}/tree`,
    });
    expect(snapshot(join(remote, "tree"))).toEqual(snapshot(tree));
    const rootMode = (path: string) => [
      statSync(path).mode & 0o777,
      Math.floor(statSync(path).mtimeMs / 1000),
    ];
    expect(rootMode(join(remote, "tree"))).toEqual(rootMode(tree));
    expect(s.records().at(-1)).toMatchObject({
      tool: "ssh_upload",
      tier: 2,
      exit_code: null,
      args: {
        host: "web",
        local: tree,
        remote,
        recursive: true,
        timeout: 0,
        user: "",
        port: 0,
        key_path: "",
        jump: "",
        known_hosts: "accept-new",
      },
    });

    const back = join(local, "back");
    const down = await s.call("ssh_download", {
      host: "web",
      remote_path: `${remote}/tree`,
      local_path: back,
      recursive: true,
      timeout: 30,
    });
    expect(down.text).toBe(`downloaded web:${remote}/tree -> ${back}`);
    expect(down.structured).toMatchObject({
      files: 5,
      symlinks: 1,
      destination: back,
      connection_reused: true,
    });
    expect(snapshot(back)).toEqual(snapshot(tree));
    expect(rootMode(back)).toEqual(rootMode(tree));
    expect(s.records().at(-1)?.args).toMatchObject({
      remote: `${remote}/tree`,
      local: back,
      timeout: 30,
      recursive: true,
    });
  });

  it("copies a single file both ways, into a directory or to a new name", async () => {
    const file = join(local, "single.txt");
    writeFileSync(file, "one file\n");
    chmodSync(file, 0o640);
    expect((await s.call("ssh_upload", { host: "web", local_path: file, remote_path: remote })).text).toBe(
      `uploaded ${file} -> web:${remote}`,
    );
    expect(readFileSync(join(remote, "single.txt"), "utf8")).toBe("one file\n");
    expect(statSync(join(remote, "single.txt")).mode & 0o777).toBe(0o640);

    const renamed = join(local, "renamed.txt");
    const r = await s.call("ssh_download", {
      host: "web",
      remote_path: `${remote}/single.txt`,
      local_path: renamed,
    });
    expect(r.text).toBe(`downloaded web:${remote}/single.txt -> ${renamed}`);
    expect(readFileSync(renamed, "utf8")).toBe("one file\n");
    expect(statSync(renamed).mode & 0o777).toBe(0o640);
    // Over an existing file: replaced.
    writeFileSync(join(remote, "single.txt"), "changed\n");
    await s.call("ssh_download", { host: "web", remote_path: `${remote}/single.txt`, local_path: renamed });
    expect(readFileSync(renamed, "utf8")).toBe("changed\n");
  });

  it("terminates on a symlink loop by copying links as links", async () => {
    const looped = join(remote, "looped");
    mkdirSync(join(looped, "a"), { recursive: true });
    writeFileSync(join(looped, "a", "file"), "inside\n");
    symlinkSync(".", join(looped, "loop"));
    symlinkSync("..", join(looped, "a", "up"));
    symlinkSync("/etc", join(looped, "outside"));
    const dest = join(local, "looped-copy");
    const started = Date.now();
    const r = await s.call("ssh_download", {
      host: "web",
      remote_path: looped,
      local_path: dest,
      recursive: true,
    });
    expect(r.text).toBe(`downloaded web:${looped} -> ${dest}`);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.structured).toMatchObject({ files: 1, directories: 2, symlinks: 3 });
    expect(readlinkSync(join(dest, "loop"))).toBe(".");
    expect(readlinkSync(join(dest, "a", "up"))).toBe("..");
    // Not followed: the link is there, /etc was not copied.
    expect(readlinkSync(join(dest, "outside"))).toBe("/etc");
    expect(readdirSync(dest).sort()).toEqual(["a", "loop", "outside"]);
  });

  const failures: Array<[string, () => [string, Record<string, unknown>], () => string | RegExp]> = [
    [
      "a remote path that does not exist",
      () => ["ssh_download", { remote_path: "/nonexistent/relay/x", local_path: join(local, "x") }],
      () => "[ERROR: FileNotFoundError: no such file: web:/nonexistent/relay/x]",
    ],
    [
      "a remote directory that does not exist",
      () => ["ssh_upload", { local_path: join(local, "single.txt"), remote_path: "/nonexistent/relay/x" }],
      () => "[ERROR: FileNotFoundError: no such directory for web:/nonexistent/relay/x]",
    ],
    [
      "a local directory that does not exist",
      () => ["ssh_download", { remote_path: `${remote}/single.txt`, local_path: join(local, "no", "x") }],
      () => `[ERROR: FileNotFoundError: no such local directory for ${join(local, "no", "x")}]`,
    ],
    [
      "a local path that does not exist",
      () => ["ssh_upload", { local_path: join(local, "missing"), remote_path: remote }],
      () => `[ERROR: FileNotFoundError: no such local file: ${join(local, "missing")}]`,
    ],
    [
      "a remote directory without recursive",
      () => ["ssh_download", { remote_path: remote, local_path: join(local, "nodir") }],
      () => `[ERROR: IsADirectoryError: web:${remote} is a directory; pass recursive=true to copy the tree]`,
    ],
    [
      "a local directory without recursive",
      () => ["ssh_upload", { local_path: local, remote_path: remote }],
      () => `[ERROR: IsADirectoryError: ${local} is a directory; pass recursive=true to copy the tree]`,
    ],
    [
      "a device as the source",
      () => ["ssh_download", { remote_path: "/dev/zero", local_path: join(local, "zero") }],
      () => "[ERROR: ValueError: web:/dev/zero is not a regular file or a directory]",
    ],
    [
      "a tree onto an existing file",
      () => [
        "ssh_upload",
        { local_path: join(local, "tree"), remote_path: `${remote}/single.txt`, recursive: true },
      ],
      () => `[ERROR: NotADirectoryError: web:${remote}/single.txt exists and is not a directory]`,
    ],
  ];

  it.each(failures)(
    "answers %s with a clear error, audited, and stays healthy",
    async (_label, call, expected) => {
      const [tool, args] = call();
      const before = s.records().length;
      const r = await s.call(tool, { host: "web", ...args });
      const want = expected();
      if (typeof want === "string") expect(r.text).toBe(want);
      else expect(r.text).toMatch(want);
      expect(s.records().length).toBe(before + 1);
      expect(s.records().at(-1)).toMatchObject({ tool, denied: false, exit_code: null });
      const ok = await s.call("ssh_download", {
        host: "web",
        remote_path: `${remote}/single.txt`,
        local_path: join(local, "ok.txt"),
      });
      expect(ok.text).toMatch(/^downloaded /);
    },
  );

  it("stops at the timeout, says so, and leaves the partial file", async () => {
    // A sparse 64 GiB file costs no disk here; written to /dev/null it costs none there either.
    const huge = join(local, "huge.bin");
    writeFileSync(huge, "");
    truncateSync(huge, 64 * 2 ** 30);
    const started = Date.now();
    const r = await s.call("ssh_upload", {
      host: "web",
      local_path: huge,
      remote_path: "/dev/null",
      timeout: 1,
    });
    expect(r.text).toBe(`[TIMEOUT after 1s] partial upload ${huge} -> web:/dev/null`);
    expect(Date.now() - started).toBeLessThan(6000);
    expect(r.structured).toMatchObject({ timed_out: true, files: 0 });
    expect(r.structured.bytes).toBeGreaterThan(0);
    expect(s.records().at(-1)?.args).toMatchObject({ timeout: 1 });
    rmSync(huge);
    // The connection is still good for the next transfer.
    const ok = await s.call("ssh_download", {
      host: "web",
      remote_path: `${remote}/single.txt`,
      local_path: join(local, "ok2.txt"),
    });
    expect(ok.text).toMatch(/^downloaded /);
  });

  it("lets a host deny rule refuse a transfer before anything is dialled", async () => {
    const r = await s.call("ssh_upload", {
      host: "vault",
      local_path: join(local, "single.txt"),
      remote_path: "/tmp/x",
    });
    expect(r.text).toBe("[DENIED tier 2 (STATEFUL): matched RELAY_SHELL_POLICY_DENY]");
    expect(s.records().at(-1)).toMatchObject({ tool: "ssh_upload", denied: true, tier: 2 });
    const d = await s.call("ssh_download", {
      host: "vault",
      remote_path: "/etc/hostname",
      local_path: join(local, "h"),
    });
    expect(d.text).toBe("[DENIED tier 2 (STATEFUL): matched RELAY_SHELL_POLICY_DENY]");
  });
});
