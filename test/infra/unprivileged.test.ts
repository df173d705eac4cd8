import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DAEMON_USER, ensureSystemUser, INFRA_SKIP_REASON, type SystemUser } from "../fixtures/infra.js";
import { REPO_ROOT } from "../helpers/server.js";

/**
 * The snapshot walk as the daemon's own unprivileged account (root reads
 * everything, so these cases only show under another uid): a source file the
 * broker may not read is a refusal naming it, and a pulled copy whose
 * directories the receiver made unwritable is still removed.
 */

const SNAPSHOT_MODULE = join(REPO_ROOT, "dist", "infra", "snapshot.js");

function asDaemon(user: SystemUser, script: string, args: string[]): unknown {
  const out = execFileSync(
    "/usr/sbin/runuser",
    ["-u", user.name, "--", process.execPath, "--input-type=module", "-e", script, ...args],
    { encoding: "utf8", cwd: "/" },
  );
  return JSON.parse(out);
}

describe.skipIf(INFRA_SKIP_REASON !== null)("the snapshot walk as the daemon's account", () => {
  let user: SystemUser;
  let dir: string;

  beforeEach(() => {
    user = ensureSystemUser(DAEMON_USER);
    dir = mkdtempSync(join(tmpdir(), "infra-unprivileged-"));
    chmodSync(dir, 0o755);
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("a source file the broker cannot read is SOURCE_UNSAFE naming it, not an internal error", () => {
    const root = join(dir, "site");
    mkdirSync(root, { mode: 0o755 });
    writeFileSync(join(root, "public.txt"), "ok\n", { mode: 0o644 });
    writeFileSync(join(root, "secret.txt"), "root only\n", { mode: 0o600 });
    const dest = join(dir, "dest");
    mkdirSync(dest, { mode: 0o700 });
    chownSync(dest, user.uid, user.gid);
    const script = `
      const { takeSnapshot } = await import(process.argv[1]);
      const res = await takeSnapshot([process.argv[2]], { entries: 100, bytes: 1 << 20 }, process.argv[3]);
      process.stdout.write(JSON.stringify(res.ok ? { ok: true } : res));
    `;
    const res = asDaemon(user, script, [SNAPSHOT_MODULE, root, dest]);
    expect(res).toEqual({
      ok: false,
      error: {
        code: "SOURCE_UNSAFE",
        message: `${join(root, "secret.txt")} cannot be read by the broker (permission denied).`,
      },
    });
  });

  it("removes a pulled copy whose directories were made unwritable", () => {
    const scratch = join(dir, "scratch");
    mkdirSync(scratch, { mode: 0o700 });
    chownSync(scratch, user.uid, user.gid);
    const tree = join(scratch, "pulled");
    mkdirSync(join(tree, "a", "b"), { recursive: true });
    writeFileSync(join(tree, "a", "b", "f"), "x");
    execFileSync("chown", ["-R", `${user.uid}:${user.gid}`, tree]);
    chmodSync(join(tree, "a", "b"), 0o500);
    chmodSync(join(tree, "a"), 0o000);
    const script = `
      const { removeTree } = await import(process.argv[1]);
      await removeTree(process.argv[2]);
      process.stdout.write("true");
    `;
    expect(asDaemon(user, script, [SNAPSHOT_MODULE, tree])).toBe(true);
    expect(existsSync(tree)).toBe(false);
  });
});
