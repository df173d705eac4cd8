// Another process appending to an audit file through the BUILT writer (dist/), as a second relay
// would. Arguments: PATH TAG COUNT RATE CHAIN. RATE is records per second (0: as fast as it can);
// CHAIN is "true" or "false". Prints one JSON line when done: {"written", "failed"}.
import { createAuditLog } from "../../dist/audit/index.js";
import { systemClock } from "../../dist/core/index.js";

const [path, tag, countText, rateText, chainText] = process.argv.slice(2);
const count = Number(countText);
const rate = Number(rateText);
const log = createAuditLog(
  { path, format: "jsonl", chain: chainText === "true", stderrEcho: false },
  { clock: systemClock, stderr: (line) => process.stderr.write(line) },
);

let written = 0;
let failed = 0;
function appendOne() {
  const n = written + failed;
  const ok = log.append({
    tool: "shell_exec",
    tier: n % 4,
    denied: false,
    args: { command: `echo ${tag}-${n}`, cwd: "/tmp" },
    output: `[exit 0]\n${tag}-${n}\n`,
    exitCode: 0,
    clientId: tag,
  });
  if (ok) written += 1;
  else failed += 1;
}

function finish() {
  log.close();
  process.stdout.write(`${JSON.stringify({ written, failed })}\n`);
}

if (rate <= 0) {
  while (written + failed < count) appendOne();
  finish();
} else {
  // Paced by the clock, not by the timer's accuracy: each tick writes what is due by now.
  const start = performance.now();
  const timer = setInterval(() => {
    const due = Math.min(count, Math.floor(((performance.now() - start) / 1000) * rate));
    while (written + failed < due) appendOne();
    if (written + failed >= count) {
      clearInterval(timer);
      finish();
    }
  }, 2);
}
