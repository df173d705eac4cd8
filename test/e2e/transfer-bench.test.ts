import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTransferBench } from "../../bench/transfer.bench.js";
import { announceSkip, SSHD_MISSING } from "../fixtures/sshd.js";

/** The peers the bench measures against: OpenSSH's scp and rsync over ssh. */
const PEERS_MISSING = ["scp", "rsync"].some(
  (tool) => !(process.env.PATH ?? "").split(":").some((dir) => dir !== "" && existsSync(join(dir, tool))),
);

announceSkip("transfer benchmark, small");
if (PEERS_MISSING)
  process.stderr.write("[skipped] transfer benchmark, small: scp or rsync is not installed\n");

/**
 * The transfer benchmark at a small size (`npm run bench -- transfer` runs it at full size): every
 * copy it times, by the relay and by scp and rsync, is compared byte for byte with its source inside
 * the bench, which throws on the first difference; here every figure must come out measured.
 */
describe.skipIf(SSHD_MISSING || PEERS_MISSING)("the transfer benchmark, small", () => {
  it("copies a file and a tree both ways, verifies every copy and reports each figure", async () => {
    const figures = await createTransferBench({ mib: 4, files: 50, rounds: 2 }).run();
    const named = new Map(figures.map((f) => [f.name, f]));
    const ratios = figures.filter((f) => f.target.startsWith("<="));
    expect(ratios.map((f) => f.name.split(":")[0])).toEqual([
      "4 MiB file, upload",
      "4 MiB file, download",
      "50-file tree, upload",
      "50-file tree, download",
    ]);
    for (const figure of ratios) {
      expect(figure.unit).toBe("x");
      expect(figure.value, figure.name).toBeGreaterThan(0);
      expect(Number.isFinite(figure.value), figure.name).toBe(true);
      expect(typeof figure.met).toBe("boolean");
    }
    for (const figure of figures.filter((f) => f.unit === "ms" || f.unit === "MiB/s" || f.unit === "MiB")) {
      expect(figure.value, figure.name).toBeGreaterThan(0);
      expect(Number.isFinite(figure.value), figure.name).toBe(true);
    }
    expect(named.get("4 MiB file, upload: relay (median)")?.value).toBeGreaterThan(0);
    expect(named.get("50-file tree, download: rsync -a (median)")?.value).toBeGreaterThan(0);
  }, 120_000);
});
