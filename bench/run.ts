import { coreBench } from "./core.bench.js";
import { httpBench } from "./http.bench.js";
import { sessionsBench } from "./sessions.bench.js";
import { sshBench } from "./ssh.bench.js";
import type { Bench, BenchFigure } from "./types.js";

/** Runs every benchmark and prints each figure with its target and whether it is met. */
const benches: Bench[] = [coreBench, sessionsBench, sshBench, httpBench];

function format(figure: BenchFigure): string {
  const value = Number.isFinite(figure.value)
    ? figure.value.toFixed(figure.unit === "x" ? 2 : 3)
    : String(figure.value);
  const verdict = figure.met === null ? "" : figure.met ? "  MET" : "  NOT MET";
  return `  ${figure.name}: ${value} ${figure.unit}  (target ${figure.target})${verdict}`;
}

let missed = 0;
for (const bench of benches) {
  console.log(`# ${bench.name}`);
  try {
    for (const figure of await bench.run()) {
      console.log(format(figure));
      if (figure.met === false) missed++;
    }
  } catch (err) {
    missed++;
    console.log(`  FAILED: ${err instanceof Error ? err.stack : String(err)}`);
  }
}
console.log(missed === 0 ? "all targets met" : `${missed} target(s) not met`);
