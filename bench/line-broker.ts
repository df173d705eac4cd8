// The scripted line broker of the end-to-end suite as a process of its own, as the daemon will be:
// `node --import tsx bench/line-broker.ts <dir>` listens on <dir>/infra.sock, prints its path once
// listening, and stops when its stdin closes.
import { startLineBroker } from "../test/helpers/infra-broker.js";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: line-broker.ts <dir>\n");
  process.exit(2);
}
const broker = await startLineBroker()(dir);
process.stdout.write(`${broker.socketPath}\n`);
process.stdin.on("end", () => {
  void broker.close().then(() => process.exit(0));
});
process.stdin.resume();
