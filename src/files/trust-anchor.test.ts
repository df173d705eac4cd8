import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { trustAnchorProblems } from "./index.js";

const root = mkdtempSync(join(tmpdir(), "relay-trust-"));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
const RUNUSER = "/usr/sbin/runuser";
const haveRunuser = spawnSync(RUNUSER, ["--help"]).error === undefined;

/** A file of `mode` in a directory of `dirMode`, both owned by `uid` unless given. */
function anchor(
  name: string,
  opts: { mode?: number; dirMode?: number; fileUid?: number; dirUid?: number } = {},
) {
  const dir = join(root, name);
  mkdirSync(dir);
  const file = join(dir, "allowed_signers");
  writeFileSync(file, "ops@example.com ssh-ed25519 AAAA\n");
  chmodSync(file, opts.mode ?? 0o644);
  chmodSync(dir, opts.dirMode ?? 0o755);
  if (opts.fileUid !== undefined) chownSync(file, opts.fileUid, opts.fileUid);
  if (opts.dirUid !== undefined) chownSync(dir, opts.dirUid, opts.dirUid);
  return { dir, file };
}

const ROOT_MESSAGE =
  "is writable by the relay's process: it runs as root, which may write any file, so a relay running as root can never trust a file; run it under an account of its own";

describe.skipIf(!isRoot)("trustAnchorProblems (as root)", () => {
  it("always refuses: a root-owned 0644 file in a 0755 directory is still writable by root", () => {
    const { file } = anchor("plain");
    const problems = trustAnchorProblems(file, { selfUid: 0 });
    expect(problems).toContain(`${file} ${ROOT_MESSAGE}`);
    expect(problems).toContain(`${file} is owned by the relay's own uid 0, which could rewrite it`);
  });

  it("names a symbolic link", () => {
    const { dir, file } = anchor("link");
    const link = join(dir, "via-link");
    symlinkSync(file, link);
    expect(trustAnchorProblems(link, { selfUid: 0 })).toContain(
      `${link} is a symbolic link; a trust anchor must be the regular file itself, not a link to one`,
    );
  });

  it("names mode 0666 and a 0777 directory, with their modes", () => {
    const loose = anchor("loose", { mode: 0o666 });
    expect(trustAnchorProblems(loose.file, { selfUid: 0 })).toContain(
      `${loose.file} is writable by group and others (mode 0666); only its owner may write it`,
    );
    const open = anchor("open-dir", { dirMode: 0o777 });
    expect(trustAnchorProblems(open.file, { selfUid: 0 })).toContain(
      `directory ${open.dir} is writable by group and others (mode 0777), who could replace what it holds`,
    );
    const group = anchor("group", { mode: 0o664 });
    expect(trustAnchorProblems(group.file, { selfUid: 0 })).toContain(
      `${group.file} is writable by its group (mode 0664); only its owner may write it`,
    );
  });

  it("follows a linked directory to where it leads and checks the directories there too", () => {
    const target = anchor("link-target", { dirMode: 0o777 });
    const via = join(root, "linked-dir");
    symlinkSync(target.dir, via);
    expect(trustAnchorProblems(join(via, "allowed_signers"), { selfUid: 0 })).toContain(
      `directory ${target.dir} is writable by group and others (mode 0777), who could replace what it holds`,
    );
  });

  it("names a missing path and something that is not a regular file", () => {
    expect(trustAnchorProblems(join(root, "absent"), { selfUid: 0 })).toEqual([
      `${join(root, "absent")} does not exist`,
    ]);
    const { dir } = anchor("is-dir");
    expect(trustAnchorProblems(dir, { selfUid: 0 })).toContain(`${dir} is not a regular file`);
  });

  it("reports a relative path by its absolute name", () => {
    const { file } = anchor("relative");
    const relative = `${join("..", "..", "..", "..", "..", "..", "..", "..", file)}`;
    expect(trustAnchorProblems(relative, { selfUid: 0 })[0]).toContain(file);
  });
});

/** Runs trustAnchorProblems from the built module as the unprivileged user `nobody`. */
function asNobody(paths: string[]): string[][] {
  const module = join(import.meta.dirname, "..", "..", "dist", "files", "index.js");
  const script = `
    const { trustAnchorProblems } = await import(${JSON.stringify(module)});
    const paths = ${JSON.stringify(paths)};
    process.stdout.write(JSON.stringify(paths.map((p) => trustAnchorProblems(p, { selfUid: process.getuid() }))));
  `;
  const out = spawnSync(
    RUNUSER,
    ["-u", "nobody", "--", process.execPath, "--input-type=module", "-e", script],
    {
      encoding: "utf8",
      timeout: 20_000,
    },
  );
  if (out.status !== 0) throw new Error(`runuser failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as string[][];
}

describe.skipIf(!isRoot || !haveRunuser)("trustAnchorProblems (as nobody)", () => {
  it("accepts what only root can change and refuses what nobody could", () => {
    const safe = anchor("safe");
    const owned = anchor("owned-by-nobody", { fileUid: NOBODY });
    const inOwnDir = anchor("dir-of-nobody", { dirUid: NOBODY });
    const sticky = anchor("sticky", { dirMode: 0o1777 });
    const open = anchor("open", { dirMode: 0o777 });
    const ownedInSticky = anchor("own-in-sticky", { dirMode: 0o1777, fileUid: NOBODY });
    const [safeP, ownedP, dirP, stickyP, openP, ownedStickyP] = asNobody([
      safe.file,
      owned.file,
      inOwnDir.file,
      sticky.file,
      open.file,
      ownedInSticky.file,
    ]);
    expect(safeP).toEqual([]);
    expect(ownedP).toEqual([
      `${owned.file} is owned by the relay's own uid ${NOBODY}, which could rewrite it`,
      `${owned.file} is writable by the relay's process (uid ${NOBODY})`,
    ]);
    expect(dirP).toEqual([
      `directory ${inOwnDir.dir} is owned by the relay's own uid ${NOBODY}, which could replace what it holds`,
    ]);
    // Others may write a sticky directory, but not rename or remove root's file in it.
    expect(stickyP).toEqual([]);
    expect(openP).toEqual([
      `directory ${open.dir} is writable by group and others (mode 0777), who could replace what it holds`,
      `directory ${open.dir} is writable by the relay's process (uid ${NOBODY}), which could replace what it holds`,
    ]);
    expect(ownedStickyP).toContain(
      `directory ${ownedInSticky.dir} is writable by group and others (mode 01777), who could replace what it holds`,
    );
  });
});
