import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import ssh2, { type Client } from "ssh2";
import { createSshFixture, SSHD_MISSING, SSHD_SKIP_REASON } from "../test/fixtures/sshd.js";
import { startBenchServer, timeEach } from "./harness.js";
import { type Bench, type BenchFigure, median } from "./types.js";

const ROUNDS = 60;
const WARMUP = 10;
const OPENSSH_ROUNDS = 30;
const FANOUT_HOSTS = 20;
const FANOUT_CONCURRENCY = 8;
const FANOUT_ROUNDS = 7;

/** One ssh2 connection the way the relay dials it (own NODELAY socket), for the bare baseline. */
function bareConnect(port: number, user: string, key: Buffer): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    const sock = connect({ host: "127.0.0.1", port, noDelay: true });
    sock.setNoDelay(true);
    client.once("ready", () => resolve(client)).once("error", reject);
    client.connect({ sock, username: user, privateKey: key, hostVerifier: () => true });
  });
}

function bareExec(client: Client, command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) return reject(err);
      channel.on("data", () => undefined);
      channel.stderr.on("data", () => undefined);
      channel.on("close", () => resolve());
    });
  });
}

function run(argv: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const [cmd = "", ...args] = argv;
    const child = spawn(cmd, args, { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? -1));
  });
}

/**
 * `ssh_exec true` on a warm pooled connection, through the built server and
 * the MCP client, against a bare ssh2 exec loop and OpenSSH multiplexing;
 * and a 20-host fan-out against the single-host time.
 */
export const sshBench: Bench = {
  name: "ssh",
  async run(): Promise<BenchFigure[]> {
    if (SSHD_MISSING) {
      console.warn(`ssh bench skipped: ${SSHD_SKIP_REASON}`);
      return [];
    }
    const fx = createSshFixture();
    // One sshd listens on at most 16 ports: two of them serve the 20 hosts.
    const [sshd, more] = await Promise.all([
      fx.start({ ports: FANOUT_HOSTS / 2 }),
      fx.start({ ports: FANOUT_HOSTS / 2 }),
    ]);
    const ports = [...sshd.ports, ...more.ports];
    const hosts = ports.map((_, i) => `b${String(i + 1).padStart(2, "0")}`);
    const inventory = join(fx.dir, "bench-inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify(
        Object.fromEntries(
          hosts.map((h, i) => [h, { hostname: "127.0.0.1", port: ports[i], user: fx.user }]),
        ),
      ),
    );
    const server = await startBenchServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "bench_known_hosts"),
    });
    const bare = await bareConnect(sshd.port, fx.user, readFileSync(fx.clientKey));
    const control = join(fx.dir, "cm-%C");
    const openssh = [
      "ssh",
      "-o",
      "ControlMaster=auto",
      "-o",
      `ControlPath=${control}`,
      "-o",
      "ControlPersist=60",
      "-o",
      "BatchMode=yes",
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      `UserKnownHostsFile=${join(fx.dir, "openssh_known_hosts")}`,
      "-i",
      fx.clientKey,
      "-p",
      String(sshd.port),
      `${fx.user}@127.0.0.1`,
    ];
    try {
      const relayExec = async () => {
        const text = await server.call("ssh_exec", { host: hosts[0] ?? "", command: "true" });
        // The first call learns the host key and carries a first-contact notice after the result.
        if (!text.startsWith("[exit 0]\n")) throw new Error(`ssh_exec failed: ${text}`);
      };
      const bareOnce = () => bareExec(bare, "true");
      const opensshOnce = async () => {
        const code = await run([...openssh, "true"]);
        if (code !== 0) throw new Error(`ssh exited ${code}`);
      };
      await timeEach(WARMUP, relayExec);
      await timeEach(WARMUP, bareOnce);
      await timeEach(3, opensshOnce);

      // The MCP round trip of a tool that does no work: what any tool call costs before its own work.
      const noopOnce = () => server.call("session_list", {});
      await timeEach(WARMUP, noopOnce);
      const relay: number[] = [];
      const bareTimes: number[] = [];
      const opensshTimes: number[] = [];
      const noopTimes: number[] = [];
      // Interleaved so background load hits every variant alike.
      for (let round = 0; round < 3; round++) {
        relay.push(...(await timeEach(ROUNDS / 3, relayExec)));
        bareTimes.push(...(await timeEach(ROUNDS / 3, bareOnce)));
        opensshTimes.push(...(await timeEach(OPENSSH_ROUNDS / 3, opensshOnce)));
        noopTimes.push(...(await timeEach(ROUNDS / 3, noopOnce)));
      }
      const noopMedian = median(noopTimes);
      const relayMedian = median(relay);
      const bareMedian = median(bareTimes);
      const opensshMedian = median(opensshTimes);

      const fanoutOnce = async () => {
        const text = await server.call("ssh_fanout", {
          command: "true",
          hosts: hosts.join(","),
          concurrency: FANOUT_CONCURRENCY,
        });
        const parsed = JSON.parse(text) as { results: Array<{ exit_code: number | null }> };
        if (parsed.results.some((r) => r.exit_code !== 0))
          throw new Error(`fan-out failed: ${text.slice(0, 500)}`);
      };
      // The first fan-out dials all 20 hosts; the measured ones ride warm connections.
      await fanoutOnce();
      const fanoutMedian = median(await timeEach(FANOUT_ROUNDS, fanoutOnce));
      const fanoutBound = 1.5 * Math.ceil(FANOUT_HOSTS / FANOUT_CONCURRENCY) * relayMedian;

      // What the machine itself allows: the same fan-out with bare ssh2 clients, no relay in between.
      const bareClients = await Promise.all(
        ports.map((p) => bareConnect(p, fx.user, readFileSync(fx.clientKey))),
      );
      const bareFanout = async () => {
        let next = 0;
        const lane = async () => {
          while (next < bareClients.length) {
            const client = bareClients[next++];
            if (client) await bareExec(client, "true");
          }
        };
        await Promise.all(Array.from({ length: FANOUT_CONCURRENCY }, lane));
      };
      await bareFanout();
      const bareFanoutMedian = median(await timeEach(FANOUT_ROUNDS, bareFanout));
      for (const client of bareClients) client.end();

      const vsBare = relayMedian / bareMedian;
      const vsOpenssh = relayMedian / opensshMedian;
      return [
        {
          name: "ssh_exec true, warm (median)",
          value: relayMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "bare ssh2 exec, NODELAY (median)",
          value: bareMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "OpenSSH ControlMaster exec (median)",
          value: opensshMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "MCP round trip of a tool that does no work (session_list), median",
          value: noopMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "floor: (bare ssh2 exec + that round trip) / bare ssh2",
          value: (bareMedian + noopMedian) / bareMedian,
          unit: "x",
          target: "reported (what ssh_exec would reach if the relay's own work cost nothing)",
          met: null,
        },
        { name: "ssh_exec / bare ssh2", value: vsBare, unit: "x", target: "<= 1.3x", met: vsBare <= 1.3 },
        {
          name: "ssh_exec / OpenSSH ControlMaster",
          value: vsOpenssh,
          unit: "x",
          target: "<= 0.5x",
          met: vsOpenssh <= 0.5,
        },
        {
          name: `bare ssh2 fan-out, ${FANOUT_HOSTS} hosts at concurrency ${FANOUT_CONCURRENCY} (median wall)`,
          value: bareFanoutMedian,
          unit: "ms",
          target: "reported (the machine's own bound for the figure below)",
          met: null,
        },
        {
          name: `bare ssh2 fan-out / (ceil(${FANOUT_HOSTS}/${FANOUT_CONCURRENCY}) x bare single exec)`,
          value: bareFanoutMedian / (Math.ceil(FANOUT_HOSTS / FANOUT_CONCURRENCY) * bareMedian),
          unit: "x",
          target: "reported (1.0 = the machine runs 8 execs in the time of one)",
          met: null,
        },
        {
          name: `ssh_fanout true, ${FANOUT_HOSTS} hosts at concurrency ${FANOUT_CONCURRENCY} (median wall)`,
          value: fanoutMedian,
          unit: "ms",
          target: `<= 1.5 x ceil(${FANOUT_HOSTS}/${FANOUT_CONCURRENCY}) x single-host median = ${fanoutBound.toFixed(1)} ms`,
          met: fanoutMedian <= fanoutBound,
        },
      ];
    } finally {
      bare.end();
      await run([...openssh.slice(0, 7), "-O", "exit", `${fx.user}@127.0.0.1`]).catch(() => -1);
      await server.close();
      fx.close();
    }
  },
};
