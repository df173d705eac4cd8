// The fleet floor: the least a fan-out over N hosts can cost from one process. Nothing but ssh2: one
// connection a host (TCP_NODELAY), COMMAND in a fresh exec channel on each, CONCURRENCY hosts at
// once; no protocol, no policy, no audit, no grouping. Arguments: HOSTS_JSON USER KEY_FILE
// CONCURRENCY COMMAND, where HOSTS_JSON is a file holding [{"address": …, "port": …}, …].
// Each line "run" on stdin runs the command once on every host, dialling the hosts not yet connected
// (the first run is cold, the next warm), and answers with every host's output, then a line "done".
// Host keys are not checked: the floor measures the transport, the relay checks them.
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import ssh2 from "ssh2";

const [hostsFile, user, keyFile, concurrencyText, command] = process.argv.slice(2);
const hosts = JSON.parse(readFileSync(hostsFile, "utf8"));
const privateKey = readFileSync(keyFile);
const concurrency = Number(concurrencyText);
const clients = new Map();

function dial(host) {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    const sock = connect({ host: host.address, port: host.port, noDelay: true });
    client.once("ready", () => resolve(client)).once("error", reject);
    client.connect({ sock, username: user, privateKey, hostVerifier: () => true });
  });
}

function exec(client) {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) return reject(err);
      const chunks = [];
      channel.on("data", (chunk) => chunks.push(chunk));
      channel.stderr.on("data", (chunk) => chunks.push(chunk));
      channel.on("close", () => resolve(Buffer.concat(chunks).toString("utf8")));
    });
  });
}

async function once(host) {
  const key = `${host.address}:${host.port}`;
  let client = clients.get(key);
  if (!client) {
    client = await dial(host);
    clients.set(key, client);
  }
  return exec(client);
}

async function run() {
  const outputs = new Array(hosts.length);
  let next = 0;
  const lane = async () => {
    while (next < hosts.length) {
      const index = next++;
      try {
        outputs[index] = await once(hosts[index]);
      } catch (err) {
        outputs[index] = `failed: ${err.message}\n`;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, hosts.length) }, lane));
  process.stdout.write(`${outputs.join("")}done\n`);
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line === "run") await run();
}
for (const client of clients.values()) client.end();
