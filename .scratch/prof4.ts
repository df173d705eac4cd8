import { createSshFixture } from "../test/fixtures/sshd.js";
import { buildServer } from "../src/cli/build.js";
import { loadSettings } from "../src/config/index.js";
import { silentLogger } from "../src/core/index.js";
import { join } from "node:path";
import { writeFileSync, readFileSync } from "node:fs";
import { timeEach } from "../bench/harness.js";
import { median } from "../bench/types.js";
import ssh2 from "ssh2";
import { connect } from "node:net";

const fx = createSshFixture();
const a = await fx.start({ ports: 1 });
const inv = join(fx.dir, "inv.json");
writeFileSync(inv, JSON.stringify({ h1: { hostname: "127.0.0.1", port: a.port, user: fx.user } }));
const env = { HOME: fx.home, USER: fx.user, RELAY_SHELL_INVENTORY: inv, RELAY_SHELL_SSH_CONFIG: "/none", RELAY_SHELL_AUDIT_PATH: join(fx.dir, "audit.jsonl"), RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "kh") };
const settings = loadSettings(env, { cwd: process.cwd() });
const built = await buildServer({ settings, env, logger: silentLogger });
const ctx = { requestId: "1", clientId: "", signal: new AbortController().signal };
const run = async () => { const r = await built.relay.run("ssh_exec", { host: "h1", command: "true" }, ctx); if (r.text !== "[exit 0]\n") throw new Error(r.text); };
await timeEach(10, run);
const client = new ssh2.Client();
await new Promise((res, rej) => { const sock = connect({ host: "127.0.0.1", port: a.port, noDelay: true }); client.once("ready", res).once("error", rej); client.connect({ sock, username: fx.user, privateKey: readFileSync(fx.clientKey), hostVerifier: () => true }); });
const bare = () => new Promise<void>((res, rej) => client.exec("true", (e, ch) => { if (e) return rej(e); ch.on("data", () => {}); ch.stderr.on("data", () => {}); ch.on("close", () => res()); }));
await timeEach(10, bare);
for (let r = 0; r < 4; r++) {
  console.log("relay.run", median(await timeEach(50, run)).toFixed(2), "bare", median(await timeEach(50, bare)).toFixed(2));
}
const bogus = () => built.relay.run("ssh_exec", { host: "h1", command: "true", known_hosts: "bogus" }, ctx);
const info = () => built.relay.run("server_info", {}, ctx);
const hostsT = () => built.relay.run("ssh_hosts", {}, ctx);
for (let r = 0; r < 3; r++) console.log("bogus", median(await timeEach(100, bogus)).toFixed(3), "info", median(await timeEach(100, info)).toFixed(3), "hosts", median(await timeEach(100, hostsT)).toFixed(3));
client.end(); built.close(); fx.close();
