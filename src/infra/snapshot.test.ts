import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashTree, takeSnapshot } from "./snapshot.js";

let dir: string;
let root: string;
let dest: string;
const roomy = { entries: 100, bytes: 1 << 20 };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "infra-snapshot-"));
  root = join(dir, "src", "www");
  dest = join(dir, "dest");
  mkdirSync(join(root, "a", "b"), { recursive: true });
  mkdirSync(dest, { mode: 0o700 });
  writeFileSync(join(root, "top.txt"), "top\n");
  writeFileSync(join(root, "a", "b", "deep.txt"), "deep\n");
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("takeSnapshot", () => {
  it("copies each root under its base name, private, with mtimes kept, and lists what it copied", async () => {
    utimesSync(join(root, "top.txt"), new Date(1_600_000_000_000), new Date(1_600_000_000_000));
    chmodSync(join(root, "top.txt"), 0o4640);
    chmodSync(join(root, "a", "b", "deep.txt"), 0o444);
    chmodSync(join(root, "a"), 0o2550);
    const res = await takeSnapshot([root], roomy, dest);
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    expect(res.value.manifest.directories).toEqual(["www", "www/a", "www/a/b"]);
    expect(res.value.manifest.files.map((f) => [f.path, f.size])).toEqual([
      ["www/a/b/deep.txt", 5],
      ["www/top.txt", 4],
    ]);
    expect(res.value.id).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(dest, "www", "a", "b", "deep.txt"), "utf8")).toBe("deep\n");
    // The source's permission bits, and always the owner's: 0640 stays, 0444 gains the owner's write.
    expect(statSync(join(dest, "www", "top.txt")).mode & 0o7777).toBe(0o640);
    expect(statSync(join(dest, "www", "a", "b", "deep.txt")).mode & 0o7777).toBe(0o644);
    expect(statSync(join(dest, "www", "a")).mode & 0o7777).toBe(0o750);
    expect(statSync(join(dest, "www", "top.txt")).mtimeMs).toBe(1_600_000_000_000);
    const second = await takeSnapshot([root], roomy, mkdtempSync(join(dir, "again-")));
    expect(second.ok && second.value.id).toBe(res.value.id);
  });

  it.each([
    [
      "a symlink out of the root",
      () => symlinkSync("/etc/shadow", join(root, "a", "shadow")),
      "www/a/shadow",
    ],
    ["a symlink inside the root", () => symlinkSync("../top.txt", join(root, "a", "top")), "www/a/top"],
    ["a symlinked directory", () => symlinkSync("/etc", join(root, "etc")), "www/etc"],
    ["a fifo", () => execFileSync("mkfifo", [join(root, "a", "pipe")]), "www/a/pipe"],
  ])("refuses %s, naming it, and copies nothing past it", async (_, plant, name) => {
    plant();
    const res = await takeSnapshot([root], roomy, dest);
    expect(res.ok).toBe(false);
    if (res.ok) return;
    expect(res.error.code).toBe("SOURCE_UNSAFE");
    expect(res.error.message).toContain(join(root, name.slice("www/".length)));
  });

  it("refuses a socket and, as root, a device without opening it", async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(join(root, "sock"), resolve));
    try {
      const res = await takeSnapshot([root], roomy, dest);
      expect(!res.ok && res.error.code).toBe("SOURCE_UNSAFE");
    } finally {
      server.close();
    }
    rmSync(join(root, "sock"), { force: true });
    if (process.geteuid?.() === 0) {
      execFileSync("mknod", [join(root, "null"), "c", "1", "3"]);
      const res = await takeSnapshot([root], roomy, mkdtempSync(join(dir, "d-")));
      expect(!res.ok && res.error.message).toContain("device, fifo or socket");
    }
  });

  it("keeps names as bytes: newlines, backslashes, bytes not UTF-8 are staged and listed as they are", async () => {
    const names = [
      Buffer.from("new\nline"),
      Buffer.from("back\\slash"),
      Buffer.concat([Buffer.from("latin1-"), Buffer.from([0xe9])]),
      Buffer.from("café"),
    ];
    for (const name of names) writeFileSync(Buffer.concat([Buffer.from(`${root}/`), name]), "x");
    const into = mkdtempSync(join(dir, "d-"));
    const res = await takeSnapshot([root], roomy, into);
    expect(res.ok).toBe(true);
    const paths = res.ok ? res.value.manifest.files.map((f) => Buffer.from(f.path, "latin1")) : [];
    for (const name of names) {
      expect(paths.some((p) => p.equals(Buffer.concat([Buffer.from("www/"), name])))).toBe(true);
      expect(readFileSync(Buffer.concat([Buffer.from(`${into}/www/`), name]), "utf8")).toBe("x");
    }
    // The staged copy hashes to the same byte names.
    const again = await hashTree(join(into, "www"), roomy);
    expect(again.ok && again.value.files.map((f) => f.path).sort()).toEqual(
      res.ok ? res.value.manifest.files.map((f) => f.path.slice("www/".length)).sort() : [],
    );
  });

  it("refuses roots that are not absolute and normalised, symlinks, missing, or share a base name", async () => {
    const bad = async (roots: string[]) => {
      const res = await takeSnapshot(roots, roomy, mkdtempSync(join(dir, "d-")));
      return !res.ok && res.error.code;
    };
    expect(await bad([`${root}/../www`])).toBe("SOURCE_UNSAFE");
    expect(await bad(["relative/www"])).toBe("SOURCE_UNSAFE");
    expect(await bad(["/"])).toBe("SOURCE_UNSAFE");
    expect(await bad([join(dir, "nope")])).toBe("SOURCE_UNSAFE");
    symlinkSync(root, join(dir, "link"));
    expect(await bad([join(dir, "link")])).toBe("SOURCE_UNSAFE");
    mkdirSync(join(dir, "other", "www"), { recursive: true });
    expect(await bad([root, join(dir, "other", "www")])).toBe("SOURCE_UNSAFE");
    expect(await bad([])).toBe("SOURCE_UNSAFE");
  });

  it("stops at the entry, byte and per-file bounds before reading past them", async () => {
    const limited = async (limits: { entries: number; bytes: number; fileBytes?: number }) => {
      const res = await takeSnapshot([root], limits, mkdtempSync(join(dir, "d-")));
      return res.ok ? "OK" : res.error.code;
    };
    // www, top.txt, a, b, deep.txt: five entries, nine bytes.
    expect(await limited({ entries: 5, bytes: 9 })).toBe("OK");
    expect(await limited({ entries: 4, bytes: 9 })).toBe("LIMIT_EXCEEDED");
    expect(await limited({ entries: 5, bytes: 8 })).toBe("LIMIT_EXCEEDED");
    expect(await limited({ entries: 5, bytes: 9, fileBytes: 4 })).toBe("LIMIT_EXCEEDED");
    // A directory with many entries is refused while it is being listed, not after.
    for (let i = 0; i < 50; i++) writeFileSync(join(root, `f${i}`), "");
    expect(await limited({ entries: 10, bytes: 9 })).toBe("LIMIT_EXCEEDED");
  });
});

describe("messages", () => {
  it("name a deep path by its start and end, within the protocol's bound on a message", async () => {
    let deep = root;
    for (let i = 0; i < 30; i++) deep = join(deep, `level-${String(i).padStart(2, "0")}-${"d".repeat(100)}`);
    mkdirSync(deep, { recursive: true });
    symlinkSync("/etc/passwd", join(deep, "planted"));
    const res = await takeSnapshot([root], roomy, dest);
    expect(res.ok).toBe(false);
    if (res.ok) return;
    expect(res.error.message.length).toBeLessThan(600);
    expect(res.error.message).toContain(`${root}/level-00`);
    expect(res.error.message).toContain("level-29-ddd");
    expect(res.error.message).toContain("/planted is a symbolic link");
  });
});

describe("hashTree", () => {
  it("hashes in place, relative to the directory, under the same rules", async () => {
    const res = await hashTree(root, roomy);
    expect(res.ok && res.value.files.map((f) => f.path).sort()).toEqual(["a/b/deep.txt", "top.txt"]);
    expect(res.ok && res.value.directories).toEqual(["a", "a/b"]);
    symlinkSync("/etc/passwd", join(root, "planted"));
    expect((await hashTree(root, roomy)).ok).toBe(false);
  });
});
