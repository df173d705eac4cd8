// A second process on the same consent database, driven line by line over stdin:
// each line is one JSON command, each answer one JSON line on stdout. It loads
// the BUILT store (dist/), as a second relay would.
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { openSqliteStore } from "../../dist/consent/sqlite-store.js";
import { cryptoIds, systemClock } from "../../dist/core/index.js";

const [path, busy] = process.argv.slice(2);
const opened = openSqliteStore(path, { clock: systemClock, ids: cryptoIds, busyTimeoutMs: Number(busy) });
const answer = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
if (!opened.ok) {
  answer({ ready: false, failure: opened.error.failure, detail: opened.error.detail });
  process.exit(1);
}
const store = opened.value;
answer({ ready: true, instanceId: store.instanceId });

let held = null;
const outcome = (r) =>
  r.ok ? { ok: true } : { ok: false, failure: r.error.failure, detail: r.error.detail };

createInterface({ input: process.stdin }).on("line", async (line) => {
  const command = JSON.parse(line);
  switch (command.op) {
    case "consume":
      answer(outcome(await store.consume(command.id, command.nonce)));
      break;
    case "take": {
      const counts = { taken: 0, none: 0, locked: 0, other: 0 };
      for (let i = 0; i < command.times; i += 1) {
        const r = await store.takeLeaseRead(command.session, command.idleMs);
        if (r.ok) counts[r.value === null ? "none" : "taken"] += 1;
        else counts[r.error.failure === "locked" ? "locked" : "other"] += 1;
      }
      answer(counts);
      break;
    }
    case "hold":
      // A writer that keeps the lock: BEGIN IMMEDIATE on a raw connection, released on "release".
      held = new Database(path);
      held.exec("BEGIN IMMEDIATE");
      answer({ held: true });
      break;
    case "release":
      held?.exec("COMMIT");
      held?.close();
      held = null;
      answer({ released: true });
      break;
    default:
      answer({ error: `unknown op ${command.op}` });
  }
});
