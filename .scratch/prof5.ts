import { createSshFixture } from "../test/fixtures/sshd.js";
import { readFileSync } from "node:fs";
import { timeEach } from "../bench/harness.js";
import { median } from "../bench/types.js";
import ssh2, { type Client } from "ssh2";
import { connect } from "node:net";
import { mapBounded } from "../src/ssh/index.js";

const fx = createSshFixture();
const [a, b] = await Promise.all([fx.start({ ports: 10 }), fx.start({ ports: 10 })]);
const ports = [...a.ports, ...b.ports];
const key = readFileSync(fx.clientKey);
const clients: Client[] = await Promise.all(ports.map((port) => new Promise<Client>((res, rej) => { const c = new ssh2.Client(); const sock = connect({ host: "127.0.0.1", port, noDelay: true }); c.once("ready", () => res(c)).once("error", rej); c.connect({ sock, username: fx.user, privateKey: key, hostVerifier: () => true }); })));
const exec = (c: Client) => new Promise<void>((res, rej) => c.exec("true", (e, ch) => { if (e) return rej(e); ch.on("data", () => {}); ch.stderr.on("data", () => {}); ch.on("close", () => res()); }));
const one = () => exec(clients[0]!);
const fan = () => mapBounded(clients, 8, (c) => exec(c));
await timeEach(10, one); await timeEach(3, fan);
for (let r = 0; r < 3; r++) console.log("single", median(await timeEach(30, one)).toFixed(2), "fan20x8", median(await timeEach(7, fan)).toFixed(2));
for (const c of clients) c.end(); fx.close();
