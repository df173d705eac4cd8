import { it } from "vitest";
import { startServer } from "../test/helpers/server.js";
it("time", async () => {
  let t = performance.now();
  const e = await startServer({});
  console.log("start", performance.now() - t); t = performance.now();
  await e.call("ssh_hosts");
  console.log("call", performance.now() - t); t = performance.now();
  await e.close();
  console.log("close", performance.now() - t);
});
