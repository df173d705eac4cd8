import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds, silentLogger, systemClock } from "../core/index.js";
import { createProcessRunner } from "../exec/index.js";
import { openLedger } from "./ledger.js";
import { emptyRun, stagedTree, stageSnapshot } from "./runs.js";
import type { InfraContext, Profile } from "./types.js";

let work: string;

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), "infra-runs-"));
});

afterEach(() => {
  rmSync(work, { recursive: true, force: true });
});

describe("stageSnapshot", () => {
  it("gives the staged tree a normal directory's mode, which rsync carries to the run's directory", async () => {
    const source = join(work, "site");
    mkdirSync(source, { mode: 0o750 });
    chmodSync(source, 0o750);
    writeFileSync(join(source, "a.txt"), "a\n");
    const state = join(work, "state");
    mkdirSync(state, { mode: 0o700 });
    const profile = { id: "p", sourceRoots: [source], limits: { fileCount: 100, transferBytes: 1 << 20 } };
    const ctx = {
      stateDir: state,
      runner: createProcessRunner(),
      clock: systemClock,
      ids: cryptoIds,
      logger: silentLogger,
    } as unknown as InfraContext;
    const ledger = openLedger(state, cryptoIds);
    const staged = await stageSnapshot(ctx, ledger, profile as Profile, emptyRun(profile as Profile, "r1"));
    expect(staged.ok).toBe(true);
    const tree = stagedTree(ledger, profile as Profile, "r1");
    expect(statSync(tree).mode & 0o7777).toBe(0o755);
    // The state directory keeps it private all the same.
    expect(statSync(state).mode & 0o7777).toBe(0o700);
    // rsync without --perms makes a new destination directory with the mode of `tree/`, less its umask.
    const receiver = join(work, "receiver");
    mkdirSync(receiver, { mode: 0o755 });
    execFileSync("/usr/bin/rsync", ["-r", "-t", "--", `${tree}/`, join(receiver, "r1")], {
      env: { PATH: "/usr/bin:/bin" },
    });
    expect(statSync(join(receiver, "r1")).mode & 0o7777).toBe(0o755 & ~process.umask());
    // A source root keeps its own mode under its base name.
    expect(statSync(join(receiver, "r1", "site")).mode & 0o7777).toBe(0o750 & ~process.umask());
  });
});
