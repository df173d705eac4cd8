import { createSshFixture } from "../test/fixtures/sshd.js";
import { createSshLayer } from "../src/ssh/index.js";
import { systemClock } from "../src/core/index.js";
import { join } from "node:path";
import { writeFileSync, readFileSync } from "node:fs";

const fx = createSshFixture();
const a = await fx.start({ ports: 2 });
const inv = join(fx.dir, "inv.json");
writeFileSync(inv, JSON.stringify({ h1: { hostname: "127.0.0.1", port: a.port, user: fx.user } }));
const kh = join(fx.dir, "kh");
const svc = createSshLayer({ inventory: inv, sshConfig: "", sshKnownHosts: "accept-new", sshKnownHostsFile: kh, sshAllowWeakerKnownHosts: false, sshConnectTimeout: 5, sshKeepalive: 30, sshIdleTimeout: 60, maxConns: 10 }, { clock: systemClock, home: fx.home, localUser: "root", agentSocket: "", cwd: process.cwd() });
let t = performance.now();
const r = await svc.run({ host: "h1", command: "echo hi; echo err >&2; exit 3", timeoutSeconds: 10, maxBufferBytes: 1e6 });
console.log(r, performance.now() - t);
for (let i = 0; i < 5; i++) { t = performance.now(); const r2 = await svc.run({ host: "h1", command: "true", timeoutSeconds: 10, maxBufferBytes: 1e6 }); console.log(r2.exitCode, r2.reused, r2.hostKey?.status, (performance.now() - t).toFixed(1)); }
console.log(readFileSync(kh, "utf8"), a.fingerprint());
await a.rotateHostKey();
try { const r3 = await svc.run({ host: "h1", command: "true", timeoutSeconds: 10, maxBufferBytes: 1e6 }); console.log("r3", r3); } catch (e) { console.log("ERR", e.type, e.message); }
const t2 = performance.now();
const r4 = await svc.run({ host: "h1", command: "sleep 5", timeoutSeconds: 1, maxBufferBytes: 1e6, overrides: { knownHosts: "ignore" } }).catch(e => e);
console.log("r4", r4, performance.now() - t2);
svc.close(); fx.close();
