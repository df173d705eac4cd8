import { describe, expect, it } from "vitest";
import type { BenchFigure } from "../../bench/types.js";

/**
 * The per-call benchmark at a small size (`npm run bench -- perf` runs it at full size): the C
 * floor builds and runs as its own process, and every figure whose subjects are on this machine is
 * measured. Peers installed only by `npm run bench:peers` (codex, ssh-mcp) may be absent; their
 * figures must then say so rather than pass. No timing is judged here.
 */
describe("the perf benchmark, small", () => {
  it("measures every figure against the C posix_spawn floor, the ssh2 floor and the no-op server", async () => {
    process.env.RELAY_SHELL_BENCH_PERF_SMALL = "1";
    const { perfBench } = await import("../../bench/perf.bench.js");
    const figures: BenchFigure[] = await perfBench.run();
    const named = new Map(figures.map((f) => [f.name, f]));
    const always = [
      "shell_exec true p50 / (C posix_spawn floor + SDK no-op round trip)",
      "shell_exec machine CPU per call, 8 in flight / (C floor's + no-op's)",
      "ssh_exec true warm p50 / (ssh2 NODELAY floor + SDK no-op round trip)",
      "ssh_exec machine CPU per call, 8 in flight / (ssh2 floor's + no-op's)",
      "start-up to initialized / SDK no-op server's",
      "first shell_exec after start-up, tools/list and 1000 ms / warm p50",
      "RSS of the process tree idle after a call",
    ];
    for (const name of always) {
      const figure = named.get(name);
      expect(figure, name).toBeDefined();
      expect(Number.isFinite(figure?.value), name).toBe(true);
      expect(figure?.value, name).toBeGreaterThan(0);
      expect(typeof figure?.met, name).toBe("boolean");
    }
    for (const figure of figures) {
      if (figure.met === null) expect(figure.target, figure.name).toMatch(/\(.+\)$/);
    }
  }, 180_000);
});
