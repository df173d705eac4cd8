import { createSshFixture } from "../test/fixtures/sshd.js";
import { createSshLayer } from "../src/ssh/index.js";
import { systemClock } from "../src/core/index.js";
import { join } from "node:path";
import { writeFileSync } from "node:fs";

const fx = createSshFixture();
const a = await fx.start({ ports: 2 });
const b = await fx.start({ ports: 2, logLevel: "DEBUG1", extraConfig: (p) => `Match LocalPort ${p[1]}\n  AllowTcpForwarding no\n` });
const inv = join(fx.dir, "inv.json");
writeFileSync(inv, JSON.stringify({
  t: { hostname: "127.0.0.1", port: a.port, user: fx.user, jump: "bastion" },
  t2: { hostname: "127.0.0.1", port: a.ports[1], user: fx.user, jump: "badbastion" },
  bastion: { hostname: "127.0.0.1", port: b.port, user: fx.user },
  badbastion: { hostname: "127.0.0.1", port: b.ports[1], user: fx.user },
}));
const svc = createSshLayer({ inventory: inv, sshConfig: "", sshKnownHosts: "accept-new", sshKnownHostsFile: join(fx.dir, "kh"), sshAllowWeakerKnownHosts: false, sshConnectTimeout: 5, sshKeepalive: 30, sshIdleTimeout: 60, maxConns: 10 }, { clock: systemClock, home: fx.home, localUser: "root", agentSocket: "", cwd: process.cwd() });
const r = await svc.run({ host: "t", command: "echo $SSH_CONNECTION", timeoutSeconds: 10, maxBufferBytes: 1e6 });
console.log(r.output, r.jumpHostKeys, r.hostKey);
console.log(b.log().split("\n").filter(l => /direct-tcpip|originator|target/.test(l)).slice(0, 5));
const e = await svc.run({ host: "t2", command: "echo", timeoutSeconds: 10, maxBufferBytes: 1e6 }).catch(e => e);
console.log("t2", e.type, e.message);
const t0 = performance.now();
const to = await svc.run({ host: "bastion", command: "exec sleep 37", timeoutSeconds: 1, maxBufferBytes: 1e6 });
console.log("timeout", to.timedOut, performance.now() - t0);
await new Promise(r => setTimeout(r, 300));
const ps = await svc.run({ host: "bastion", command: "pgrep -f 'sleep 37' || echo gone", timeoutSeconds: 5, maxBufferBytes: 1e6 });
console.log("ps", ps.output);
const sig = await svc.run({ host: "bastion", command: "kill -TERM $$", timeoutSeconds: 5, maxBufferBytes: 1e6 });
console.log("sig", sig.exitCode, sig.exitSignal);
console.log(svc.pool.stats());
console.log(b.log().split("\n").filter(l => /signal|sleep/i.test(l)).join("\n")); svc.close(); fx.close();
