// Prints the "N passed, N failed" line CI reads, from vitest's JSON report.
import { readFileSync } from "node:fs";

const [file, statusText] = process.argv.slice(2);
const status = Number(statusText ?? "0");
let passed = 0;
let failed = 0;
try {
  const report = JSON.parse(readFileSync(file, "utf8"));
  passed = report.numPassedTests ?? 0;
  failed = (report.numFailedTests ?? 0) + (report.numRuntimeErrorTestSuites ?? 0);
} catch {
  // No report: type-check, lint or build failed before the tests ran.
}
if (status !== 0 && failed === 0) failed = 1;
process.stdout.write(`${passed} passed, ${failed} failed\n`);
