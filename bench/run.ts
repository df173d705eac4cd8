import { consentBench } from "./consent.bench.js";
import { consoleBench } from "./console.bench.js";
import { coreBench } from "./core.bench.js";
import { fleetBench } from "./fleet.bench.js";
import { httpBench } from "./http.bench.js";
import { infraBench } from "./infra.bench.js";
import { perfBench } from "./perf.bench.js";
import { scaleBench } from "./scale.bench.js";
import { sessionsBench } from "./sessions.bench.js";
import { sshBench } from "./ssh.bench.js";
import { transferBench } from "./transfer.bench.js";
import type { Bench, BenchFigure } from "./types.js";

/**
 * Runs every benchmark (or those whose names start with one of the arguments:
 * `npm run bench -- core`) and prints each figure with its target and whether it is met.
 */
const all: Bench[] = [
  coreBench,
  sessionsBench,
  sshBench,
  httpBench,
  infraBench,
  consentBench,
  consoleBench,
  perfBench,
  scaleBench,
  fleetBench,
  transferBench,
];
const wanted = process.argv.slice(2).map((arg) => arg.toLowerCase());
const benches =
  wanted.length === 0 ? all : all.filter((b) => wanted.some((w) => b.name.toLowerCase().startsWith(w)));
if (benches.length === 0) {
  console.error(`no benchmark matches ${wanted.join(", ")}; known: ${all.map((b) => b.name).join(", ")}`);
  process.exit(2);
}

function format(figure: BenchFigure): string {
  const value = Number.isFinite(figure.value) ? figure.value.toFixed(figure.unit === "x" ? 2 : 3) : "n/a";
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
