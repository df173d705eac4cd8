import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Fleet } from "../test/fixtures/fleet.js";
import {
  FLEET_COMMAND,
  type FleetRun,
  measureRun,
  type Phase,
  runProcess,
  stopMasters,
} from "./fleet-measure.js";

/**
 * The fan-out tools an operator would otherwise use, from Debian's packages,
 * each run at the relay's parallelism over the fleet's own OpenSSH client
 * config: cold (every connection new, no multiplexing), then twice through
 * control masters in a directory of the peer's own, the first run opening
 * them and the second reusing them (warm).
 */

export interface FleetRunOptions {
  /** Hosts in flight at once, the same for every tool. */
  concurrency: number;
  /** Seconds each host may take, connection included. */
  timeoutSeconds: number;
}

interface PeerSpec {
  /** The Debian package, also the name the bench prints. */
  pkg: string;
  program: string;
  argv(fleet: Fleet, sshConfig: string, o: FleetRunOptions): string[];
  env(fleet: Fleet, sshConfig: string, home: string): Record<string, string>;
}

export interface FleetPeer {
  /** The program and its version: `parallel-ssh 2.3.4`. */
  name: string;
  /** Null when installed, else what to install. */
  missing: string | null;
  spec: PeerSpec;
}

const SPECS: PeerSpec[] = [
  {
    pkg: "pssh",
    program: "/usr/bin/parallel-ssh",
    argv: (fleet, sshConfig, o) => [
      "-h",
      fleet.files.psshHosts,
      "-p",
      String(o.concurrency),
      "-t",
      String(o.timeoutSeconds),
      "-i",
      "-X",
      "-F",
      "-X",
      sshConfig,
      FLEET_COMMAND,
    ],
    env: () => ({}),
  },
  {
    pkg: "clustershell",
    program: "/usr/bin/clush",
    argv: (_fleet, sshConfig, o) => [
      "-b",
      "-f",
      String(o.concurrency),
      "-t",
      String(o.timeoutSeconds),
      "-u",
      String(o.timeoutSeconds),
      "-o",
      `-F ${sshConfig}`,
      "-w",
      "@fleet:all",
      FLEET_COMMAND,
    ],
    env: (fleet) => ({ CLUSTERSHELL_CFGDIR: fleet.files.clushDir }),
  },
  {
    pkg: "ansible-core",
    program: "/usr/bin/ansible",
    argv: (_fleet, _sshConfig, o) => [
      "all",
      "-m",
      "command",
      "-a",
      FLEET_COMMAND,
      "-f",
      String(o.concurrency),
      "-T",
      String(o.timeoutSeconds),
    ],
    env: (fleet, sshConfig, home) => ({
      ANSIBLE_CONFIG: fleet.files.ansibleConfig,
      ANSIBLE_HOME: join(home, ".ansible"),
      // Replaces the config's ssh_args: the same hosts, through control masters or not.
      ANSIBLE_SSH_ARGS: `-F ${sshConfig}`,
    }),
  },
];

/** The upstream version of an installed package (`2.14.18` of `2.14.18-0+deb12u2`). */
function packageVersion(pkg: string): string {
  try {
    const version = execFileSync("dpkg-query", ["-W", "-f", "${Version}", pkg], { encoding: "utf8" });
    return version.trim().replace(/-[^-]*$/, "");
  } catch {
    return "?";
  }
}

/**
 * The peers, each with why it cannot run when it cannot. RELAY_SHELL_BENCH_FLEET_PEERS (package
 * names, comma-separated: pssh, clustershell, ansible-core) keeps only those, for a shorter run.
 */
export function fleetPeers(
  only: string | undefined = process.env.RELAY_SHELL_BENCH_FLEET_PEERS,
): FleetPeer[] {
  const wanted =
    only === undefined || only.trim() === "" ? null : new Set(only.split(",").map((p) => p.trim()));
  if (wanted) {
    const unknown = [...wanted].filter((name) => !SPECS.some((spec) => spec.pkg === name));
    if (unknown.length > 0) {
      throw new Error(
        `RELAY_SHELL_BENCH_FLEET_PEERS: no peer ${unknown.join(", ")} (known: ${SPECS.map((s) => s.pkg).join(", ")})`,
      );
    }
  }
  return SPECS.filter((spec) => wanted === null || wanted.has(spec.pkg)).map((spec) => {
    const program = spec.program.slice(spec.program.lastIndexOf("/") + 1);
    const installed = existsSync(spec.program);
    return {
      name: installed ? `${program} ${packageVersion(spec.pkg)}` : program,
      missing: installed ? null : `not installed (apt-get install ${spec.pkg})`,
      spec,
    };
  });
}

/** How long a run may take before its process group is killed: every wave of hosts at its timeout, and a minute. */
export function runLimitMs(hosts: number, o: FleetRunOptions): number {
  return 1000 * (60 + o.timeoutSeconds * Math.ceil(hosts / o.concurrency));
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1)?.slice(0, 300) ?? "";
}

/** One peer cold, opening its control masters, then warm; its masters are stopped whatever happens. */
export async function peerRuns(peer: FleetPeer, fleet: Fleet, o: FleetRunOptions): Promise<FleetRun[]> {
  const { spec } = peer;
  const home = join(fleet.dir, `home-${spec.pkg}`);
  mkdirSync(home, { recursive: true });
  const controlDir = join(fleet.dir, `cm-${spec.pkg}`);
  const masterConfig = fleet.writeMasterConfig(controlDir);
  const limitMs = runLimitMs(fleet.hosts.length, o);
  const once = (phase: Phase, sshConfig: string, marker?: string) => {
    let pid: number | undefined;
    const watch = { roots: () => (pid === undefined ? [] : [pid]), ...(marker ? { marker } : {}) };
    return measureRun(peer.name, phase, fleet.hosts, watch, async () => {
      const env = {
        PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        HOME: home,
        LC_ALL: "C.UTF-8",
        ...spec.env(fleet, sshConfig, home),
      };
      const ran = await runProcess([spec.program, ...spec.argv(fleet, sshConfig, o)], env, limitMs, (p) => {
        pid = p;
      }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      pid = undefined;
      if (ran instanceof Error)
        return { output: "", failure: `could not start ${spec.program}: ${ran.message}` };
      const failure = ran.timedOut
        ? `killed after ${limitMs / 1000} s`
        : ran.code !== 0
          ? `exit ${ran.code}: ${lastLine(ran.stderr) || lastLine(ran.stdout)}`
          : null;
      return { output: ran.stdout, failure };
    });
  };
  try {
    return [
      await once("cold", fleet.files.sshConfig),
      await once("opening masters", masterConfig, controlDir),
      await once("warm", masterConfig, controlDir),
    ];
  } finally {
    await stopMasters(controlDir);
  }
}
