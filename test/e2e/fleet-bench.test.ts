import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benchFleet } from "../../bench/fleet.bench.js";
import { countAnswers } from "../../bench/fleet-measure.js";
import { fleetPeers } from "../../bench/fleet-peers.js";
import { processTable } from "../../bench/harness.js";
import { FLEET_SKIP_REASON, type Fleet, fleetAddress, fleetHostName, startFleet } from "../fixtures/fleet.js";

const PEERS = fleetPeers();
const MISSING = PEERS.filter((p) => p.missing !== null).map((p) => `${p.name} ${p.missing}`);
const SKIP = FLEET_SKIP_REASON ?? (MISSING.length > 0 ? MISSING.join("; ") : null);
if (SKIP !== null) process.stderr.write(`[skipped] fleet bench suite: ${SKIP}\n`);

/** Two sshd processes (16 hosts each at most), the second one part full; three waves at concurrency 8. */
const N = 20;
const CONCURRENCY = 8;
const TOOLS = ["relay-shell", ...PEERS.map((p) => p.name)];

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The `ssh` processes whose command line names `text` (clients and control masters). */
function sshNaming(text: string): number[] {
  return [...processTable()]
    .filter(([pid, { comm }]) => {
      try {
        return comm === "ssh" && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
      } catch {
        return false;
      }
    })
    .map(([pid]) => pid);
}

describe("fleet names, addresses and answers", () => {
  it("names hosts fleet0001… and gives each an address of its own off .0 and .255", () => {
    expect(fleetHostName(0, 24)).toBe("fleet0001");
    expect(fleetHostName(999, 1000)).toBe("fleet1000");
    expect(fleetHostName(0, 12_000)).toBe("fleet00001");
    expect(fleetAddress(0)).toBe("127.1.0.1");
    expect(fleetAddress(249)).toBe("127.1.0.250");
    expect(fleetAddress(250)).toBe("127.1.1.1");
    expect(new Set(Array.from({ length: 1000 }, (_, i) => fleetAddress(i))).size).toBe(1000);
  });

  it("counts a host once it answers with its own address and port, whatever the output's layout", () => {
    const hosts = [
      { name: "fleet0001", address: "127.1.0.1", port: 4000 },
      { name: "fleet0002", address: "127.1.0.2", port: 4000 },
      { name: "fleet0003", address: "127.1.0.3", port: 4001 },
    ];
    const relay = JSON.stringify({
      results: [
        { host: "fleet0001", exit_code: 0, output: "127.0.0.1 50000 127.1.0.1 4000\n" },
        { host: "fleet0002", exit_code: null, output: "[UNREACHABLE: TimeoutError: …]" },
      ],
    });
    expect(countAnswers(relay, hosts)).toBe(1);
    const pssh =
      "[1] 12:00:01 [SUCCESS] fleet0002\n127.0.0.1 50001 127.1.0.2 4000\n[2] 12:00:01 [FAILURE] fleet0001\n";
    expect(countAnswers(pssh, hosts)).toBe(1);
    const clush = "---------------\nfleet0003\n---------------\n127.0.0.1 50002 127.1.0.3 4001\n";
    expect(countAnswers(clush + clush, hosts)).toBe(1);
    const ansible =
      "fleet0001 | CHANGED | rc=0 >>\n127.0.0.1 1 127.1.0.1 4000\nfleet0002 | CHANGED | rc=0 >>\n127.0.0.1 2 127.1.0.2 4000\n" +
      "fleet0003 | CHANGED | rc=0 >>\n127.0.0.1 3 127.1.0.3 4001\n";
    expect(countAnswers(ansible, hosts)).toBe(3);
    // Another fleet's host, or the right address on another port, is not this fleet's answer.
    expect(countAnswers("127.0.0.1 1 127.1.0.9 4000\n127.0.0.1 1 127.1.0.3 4000\n", hosts)).toBe(0);
  });
});

/**
 * The fleet bench at a small size (`npm run bench -- fleet` runs 200 and 1,000 hosts): every tool
 * must reach every host in every run and every figure must be measured, so that a full run is
 * worth its minutes.
 */
describe.skipIf(SKIP !== null)("the fleet bench, small", () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await startFleet(N);
  });
  afterAll(() => fleet?.stop());

  it("starts distinct targets and writes every client's files for them", () => {
    expect(fleet.hosts.map((h) => h.name)).toEqual(Array.from({ length: N }, (_, i) => fleetHostName(i, N)));
    expect(new Set(fleet.hosts.map((h) => `${h.address}:${h.port}`)).size).toBe(N);
    expect(new Set(fleet.hosts.map((h) => h.address)).size).toBe(N);
    const inventory = JSON.parse(readFileSync(fleet.files.inventory, "utf8")) as Record<string, unknown>;
    expect(inventory.fleet0020).toEqual({
      hostname: fleet.hosts[19]?.address,
      port: fleet.hosts[19]?.port,
      user: fleet.user,
      identity_file: fleet.clientKey,
      known_hosts: "strict",
    });
    expect(readFileSync(fleet.files.knownHosts, "utf8").trim().split("\n")).toHaveLength(N);
    expect(readFileSync(fleet.files.sshConfig, "utf8").match(/^Host fleet\d{4}$/gm)).toHaveLength(N);
    expect(readFileSync(fleet.files.psshHosts, "utf8").trim().split("\n")).toHaveLength(N);
    expect(readFileSync(fleet.files.ansibleInventory, "utf8")).toContain("\nfleet0020\n");
    expect(readFileSync(`${fleet.files.clushDir}/groups.d/fleet.yaml`, "utf8")).toContain("fleet[0001-0020]");
  });

  it("reaches every host with the relay and each peer, cold and warm, and measures every figure", async () => {
    const figures = await benchFleet(fleet, { concurrency: CONCURRENCY, timeoutSeconds: 30 }, PEERS);
    const named = new Map(figures.map((f) => [f.name, f]));
    const runs = [
      "relay-shell cold",
      "relay-shell warm",
      "ssh2 floor cold",
      "ssh2 floor warm",
      ...PEERS.flatMap((p) => ["cold", "opening masters", "warm"].map((phase) => `${p.name} ${phase}`)),
    ];
    for (const run of runs) {
      const wall = named.get(`${N} hosts, ${run}: wall time`);
      expect(wall?.target, run).toBe(`reported (${N}/${N} hosts answered)`);
      expect(wall?.value, run).toBeGreaterThan(0);
      expect(Number.isFinite(named.get(`${N} hosts, ${run}: machine CPU per host`)?.value), run).toBe(true);
    }
    for (const tool of TOOLS) {
      const rss = named.get(`${N} hosts, ${tool}: peak RSS of the process tree`)?.value ?? Number.NaN;
      expect(rss, tool).toBeGreaterThan(1);
      expect(rss, tool).toBeLessThan(4096);
    }
    expect(named.get(`${N} hosts, relay-shell: peak RSS of the process tree`)?.met).toBe(true);
    for (const phase of ["cold", "warm"]) {
      const ratio = figures.find((f) => f.name.startsWith(`${N} hosts, relay-shell ${phase} / fastest peer`));
      expect(ratio?.value, phase).toBeGreaterThan(0);
      expect(typeof ratio?.met, phase).toBe("boolean");
    }
    for (const phase of ["cold", "warm"]) {
      const overFloor = named.get(`${N} hosts, relay-shell ${phase} / ssh2 floor ${phase}`);
      expect(overFloor?.value, phase).toBeGreaterThan(0);
    }
    expect(figures.filter((f) => f.met === false && !f.name.includes("/ fastest peer"))).toEqual([]);
    // Every peer's control masters were stopped with it.
    expect(sshNaming(fleet.dir)).toEqual([]);
  }, 120_000);

  it("leaves no server listening and no file behind once stopped", async () => {
    const { address, port } = fleet.hosts[0] ?? { address: "", port: 0 };
    expect(await reachable(address, port)).toBe(true);
    fleet.stop();
    expect(existsSync(fleet.dir)).toBe(false);
    expect(await reachable(address, port)).toBe(false);
  });
});
