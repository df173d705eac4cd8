import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { takeSnapshot } from "../../src/infra/snapshot.js";
import { REPO_ROOT } from "../helpers/server.js";

/**
 * Someone who can write into a source root swaps one of its directories for
 * a symlink to a directory outside and back, over and over, while snapshots
 * are taken. A walk that went by path could be led outside between its check
 * and its open; this one goes by descriptor, so each snapshot either refuses
 * (SOURCE_UNSAFE) or holds exactly the tree's own bytes. Harmless if the walk
 * were broken: the outside directory is the test's own.
 */

let dir: string;
let flipper: ChildProcess | null = null;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "infra-race-"));
});

afterEach(async () => {
  if (flipper !== null && flipper.exitCode === null) {
    const exited = new Promise((resolve) => flipper?.once("exit", resolve));
    flipper.kill("SIGKILL");
    await exited;
  }
  flipper = null;
  rmSync(dir, { recursive: true, force: true });
});

describe("a source tree changed under the walk", () => {
  it("never leads a snapshot outside its root", async () => {
    // The directory outside holds the same names as the one inside, so a walk that went by path
    // would find every name it listed and copy the outside file in its place.
    const root = join(dir, "site");
    const outside = join(dir, "outside");
    mkdirSync(join(root, "conf"), { recursive: true });
    mkdirSync(outside);
    const files = 50;
    for (let i = 0; i < files; i++) {
      writeFileSync(join(root, "conf", `f${i}.txt`), `inside ${i}\n`);
      writeFileSync(join(outside, `f${i}.txt`), `OUTSIDE ${i}\n`);
    }
    // renameat2(RENAME_EXCHANGE) swaps the directory and a symlink to the outside in one step,
    // so `conf` is always one or the other, never missing: a walk is not saved by a vanished name.
    symlinkSync(outside, join(dir, "swap"));
    const flip = `
      const koffi = require("koffi");
      const renameat2 = koffi.load("libc.so.6").func("int renameat2(int, const char *, int, const char *, unsigned int)");
      const [a, b] = process.argv.slice(1);
      const AT_FDCWD = -100;
      const RENAME_EXCHANGE = 2;
      const pause = new Int32Array(new SharedArrayBuffer(4));
      for (;;) {
        renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
        Atomics.wait(pause, 0, 0, 1);
      }
    `;
    flipper = spawn(process.execPath, ["-e", flip, join(root, "conf"), join(dir, "swap")], {
      cwd: REPO_ROOT,
      stdio: "ignore",
    });
    const outcomes = { ok: 0, refused: 0 };
    const deadline = Date.now() + 3000;
    let n = 0;
    while (Date.now() < deadline) {
      const dest = join(dir, `dest-${n++}`);
      mkdirSync(dest, { mode: 0o700 });
      const res = await takeSnapshot([root], { entries: 1000, bytes: 1 << 24 }, dest);
      if (res.ok) {
        outcomes.ok += 1;
        for (const file of res.value.manifest.files) {
          const copied = readFileSync(join(dest, file.path), "utf8");
          expect(copied).toMatch(/^inside \d+\n$/);
        }
      } else {
        outcomes.refused += 1;
        expect(res.error.code).toBe("SOURCE_UNSAFE");
      }
      rmSync(dest, { recursive: true, force: true });
    }
    // Both outcomes happen: a walk that met the symlink was refused, the others finished.
    expect(outcomes.ok).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});
