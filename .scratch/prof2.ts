import { createSshFixture } from "../test/fixtures/sshd.js";
import { createSshLayer, execRemote } from "../src/ssh/index.js";
import { systemClock } from "../src/core/index.js";
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
const svc = createSshLayer({ inventory: inv, sshConfig: "", sshKnownHosts: "accept-new", sshKnownHostsFile: join(fx.dir, "kh"), sshAllowWeakerKnownHosts: false, sshConnectTimeout: 5, sshKeepalive: 30, sshIdleTimeout: 60, maxConns: 10 }, { clock: systemClock, home: fx.home, localUser: "root", agentSocket: "", cwd: process.cwd() });
const run = () => svc.run({ host: "h1", command: "true", timeoutSeconds: 10, maxBufferBytes: 1e6 });
await timeEach(10, run);
const client = new ssh2.Client();
await new Promise((res, rej) => { const sock = connect({ host: "127.0.0.1", port: a.port, noDelay: true }); client.once("ready", res).once("error", rej); client.connect({ sock, username: fx.user, privateKey: readFileSync(fx.clientKey), hostVerifier: () => true }); });
const bare = () => new Promise<void>((res, rej) => client.exec("true", (e, ch) => { if (e) return rej(e); ch.on("data", () => {}); ch.stderr.on("data", () => {}); ch.on("close", () => res()); }));
await timeEach(10, bare);
const lease = await svc.pool.acquire(svc.directory.resolve("h1"));
const direct = () => execRemote(lease.client, { command: "true", timeoutMs: 10000, maxBufferBytes: 1e6 }, systemClock);
for (let r = 0; r < 3; r++) {
  console.log("svc.run", median(await timeEach(50, run)).toFixed(2), "bare", median(await timeEach(50, bare)).toFixed(2), "execRemote", median(await timeEach(50, direct)).toFixed(2));
}
lease.release();
client.end(); svc.close(); fx.close();
