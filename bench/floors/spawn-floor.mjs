// The spawn floor: a process that loads nothing but node:child_process (and node:fs, for /proc/stat) and
// spawns `/bin/sh -c true`,
// so each fork copies the page tables of a lean heap. Prints one JSON line:
// {"times": [ms of each sequential spawn], "rate": spawns/s with IN_FLIGHT at once, "cpuMs": machine
// CPU per spawn meanwhile, "busy": the busy share of the machine meanwhile}.
import { spawn } from "node:child_process";
import { sample } from "./sample.mjs";

const [sequential = 100, total = 200, inFlight = 8, warmup = 20] = process.argv.slice(2).map(Number);

function once() {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", "true"], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", resolve);
  });
}

const result = await sample(once, { sequential, total, inFlight, warmup });
process.stdout.write(`${JSON.stringify(result)}\n`);
