// The SSH floor: a process with one ssh2 connection on a TCP_NODELAY socket and nothing else, running
// `true` in a fresh exec channel per call. Arguments: PORT USER KEY_FILE [SEQUENTIAL TOTAL IN_FLIGHT WARMUP].
// Prints one JSON line: {"times": [ms of each sequential exec], "rate": execs/s with IN_FLIGHT channels open,
// "cpuMs": machine CPU per exec meanwhile, "busy": the busy share of the machine meanwhile}.
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import ssh2 from "ssh2";
import { sample } from "./sample.mjs";

const [port, user, keyFile, ...counts] = process.argv.slice(2);
const [sequential = 100, total = 200, inFlight = 8, warmup = 20] = counts.map(Number);

const client = await new Promise((resolve, reject) => {
  const c = new ssh2.Client();
  const sock = connect({ host: "127.0.0.1", port: Number(port), noDelay: true });
  c.once("ready", () => resolve(c)).once("error", reject);
  c.connect({ sock, username: user, privateKey: readFileSync(keyFile), hostVerifier: () => true });
});

function once() {
  return new Promise((resolve, reject) => {
    client.exec("true", (err, channel) => {
      if (err) return reject(err);
      channel.on("data", () => undefined);
      channel.stderr.on("data", () => undefined);
      channel.on("close", resolve);
    });
  });
}

const result = await sample(once, { sequential, total, inFlight, warmup });
client.end();
process.stdout.write(`${JSON.stringify(result)}\n`);
