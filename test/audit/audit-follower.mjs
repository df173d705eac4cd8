// Another process following an audit file through the BUILT follower (dist/). Arguments: PATH
// EXPECT. Prints, per line, "line <n> <chain status> <delay ms from the record's ts to delivery>",
// every 250 ms "rss <bytes>", and once EXPECT lines have come, closes the follower and prints
// "done": the process must then exit by itself, which it cannot while a watcher, a timer or a
// file of the follower is left open.
import { followAudit } from "../../dist/audit/index.js";

const [path, expectText] = process.argv.slice(2);
const expected = Number(expectText);
const out = [];
let seen = 0;
const flush = () => {
  if (out.length > 0) process.stdout.write(`${out.splice(0).join("\n")}\n`);
};
const sampler = setInterval(() => {
  out.push(`rss ${process.memoryUsage.rss()}`);
  flush();
}, 250);
out.push(`rss ${process.memoryUsage.rss()}`);
const follower = followAudit(path, {
  onRecords: (batch) => {
    const now = Date.now();
    for (const line of batch) {
      const ts = line.record === null ? Number.NaN : Date.parse(String(line.record.ts));
      out.push(`line ${line.line} ${line.chain.status} ${now - ts}`);
    }
    seen += batch.length;
    if (seen >= expected) {
      follower.close();
      clearInterval(sampler);
      out.push(`rss ${process.memoryUsage.rss()}`, "done");
    }
    flush();
  },
  onError: (error) => process.stderr.write(`follow error: ${error.message}\n`),
});
process.stdout.write("ready\n");
