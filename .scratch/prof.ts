import { startBenchServer, timeEach } from "../bench/harness.js";
import { median } from "../bench/types.js";
const s = await startBenchServer({});
for (const [name, args] of [["server_info", {}], ["ssh_hosts", {}], ["audit_tail", {lines: 1}]] as const) {
  await timeEach(20, () => s.call(name, args));
  console.log(name, median(await timeEach(100, () => s.call(name, args))).toFixed(2));
}
// raw client request without output schema validation
const raw = async () => s.client.request({ method: "tools/call", params: { name: "ssh_hosts", arguments: {} } }, (await import("@modelcontextprotocol/sdk/types.js")).CallToolResultSchema);
console.log("raw", median(await timeEach(100, raw)).toFixed(2));
const ping = () => s.client.ping();
console.log("ping", median(await timeEach(100, ping)).toFixed(2));
await s.close();
