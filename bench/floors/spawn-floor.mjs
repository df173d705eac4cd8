// The spawn floor: a process that loads nothing but node:child_process and spawns `/bin/sh -c true`,
// so each fork copies the page tables of a lean heap. Prints one JSON line:
// {"times": [ms of each sequential spawn], "rate": spawns/s with IN_FLIGHT at once}.
import { spawn } from "node:child_process";

const [sequential = 100, total = 200, inFlight = 8, warmup = 20] = process.argv.slice(2).map(Number);

function once() {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", "true"], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", resolve);
  });
}

for (let i = 0; i < warmup; i++) await once();
const times = [];
for (let i = 0; i < sequential; i++) {
  const start = performance.now();
  await once();
  times.push(performance.now() - start);
}
let next = 0;
const lane = async () => {
  while (next < total) {
    next++;
    await once();
  }
};
const start = performance.now();
await Promise.all(Array.from({ length: inFlight }, lane));
const rate = total / ((performance.now() - start) / 1000);
process.stdout.write(`${JSON.stringify({ times, rate })}\n`);
