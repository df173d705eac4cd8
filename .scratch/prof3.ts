import { startBenchServer, timeEach } from "../bench/harness.js";
import { median } from "../bench/types.js";
const s = await startBenchServer({});
const a = () => s.call("ssh_exec", { host: "b01", command: "true", known_hosts: "bogus" });
const b = () => s.call("server_info", {});
await timeEach(30, a); await timeEach(30, b);
for (let i = 0; i < 3; i++) console.log("ssh_exec-bogus", median(await timeEach(100, a)).toFixed(2), "server_info", median(await timeEach(100, b)).toFixed(2));
await s.close();
