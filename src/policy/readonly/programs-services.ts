import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry } from "./spec.js";

/**
 * Services asked about themselves: GPUs, web servers and proxies checking
 * their configuration, database and queue consoles, service meshes and
 * secret stores in their status and listing forms.
 */

const { entries, spec } = tablePart();

spec("nvidia-smi", {
  deny: [
    "-pm",
    "--persistence-mode",
    "-e",
    "--ecc-config",
    "-p",
    "--reset-ecc-errors",
    "-c",
    "--compute-mode",
    "-r",
    "--gpu-reset",
    "-pl",
    "--power-limit",
    "-ac",
    "--applications-clocks",
    "-rac",
    "-lgc",
    "-rgc",
    "-lmc",
    "-rmc",
    "-f",
    "--filename",
    "-am",
    "--accounting-mode",
    "-caa",
    "--auto-boost-default",
    "--auto-boost-permission",
    "-mig",
    "--multi-instance-gpu",
    "-cc",
  ],
  words: true,
  check: (args) =>
    operands(args, ["-i", "--id", "-d", "--display", "-l", "--loop"]).every((w) =>
      ["topo", "nvlink", "dmon", "pmon"].includes(w.value),
    ),
});
spec("numastat", true);
// Servers asked to check their configuration and print it, not to start or signal.
spec("nginx", { deny: ["-s", "-g"], check: (args) => args.some((w) => /^-[A-Za-z]*[tTvV]/.test(w.value)) });
spec("apachectl", {
  deny: ["-k"],
  check: (args) =>
    operands(args, ["-f", "-D", "-C", "-c"]).every((w) =>
      ["configtest", "status", "fullstatus", "-S"].includes(w.value),
    ) && args.some((w) => /^-[StMVvlL]|^(?:configtest|status|fullstatus)$/.test(w.value)),
});
entries.set("apache2ctl", entries.get("apachectl")!);
spec("haproxy", {
  deny: ["-D", "-sf", "-st", "-Ws", "-W", "-x", "-S"],
  words: true,
  check: (args) => args.some((w) => w.value === "-c" || w.value === "-vv" || w.value === "-v"),
});
spec("sshd", {
  words: true,
  check: (args) =>
    args.some((w) => w.value === "-T" || w.value === "-t" || w.value === "-V") &&
    args.every((w) => !/^-[dDeiq]/.test(w.value) || w.value === "-q"),
});
spec("named-checkconf", true);
spec("named-checkzone", { deny: ["-o"] });
spec("visudo", { check: (args) => args.some((w) => /^-[A-Za-z]*c/.test(w.value)) });
spec("pg_isready", true);
spec("mysqladmin", {
  check: (args) => {
    const o = operands(args, ["-h", "--host", "-u", "--user", "-P", "--port", "-S", "--socket"]);
    return (
      o.length > 0 &&
      o.every((w) =>
        ["status", "extended-status", "processlist", "variables", "version", "ping"].includes(w.value),
      )
    );
  },
});
spec("rabbitmqctl", {
  check: (args) => {
    const o = operands(args, ["-n", "--node", "-p", "--vhost", "-t", "--timeout"]);
    return (
      o.length > 0 &&
      (/^list_/.test(o[0]!.value) ||
        ["status", "cluster_status", "environment", "report", "node_health_check", "version"].includes(
          o[0]!.value,
        ))
    );
  },
});
spec("rabbitmq-diagnostics", {
  check: (args) => {
    const o = operands(args, ["-n", "--node", "-t", "--timeout"]);
    return o.length > 0 && !/^(?:set_|enable|disable|force|log_level)/.test(o[0]!.value);
  },
});
spec("nodetool", {
  check: (args) => {
    const o = operands(args, ["-h", "--host", "-p", "--port", "-u", "--username", "-pw", "--password"]);
    return (
      o.length > 0 &&
      /^(?:status|info|ring|describecluster|describering|compactionstats|compactionhistory|netstats|tablestats|cfstats|tpstats|gcstats|proxyhistograms|tablehistograms|cfhistograms|version|gossipinfo|statusbinary|statusgossip|statusthrift|statusbackup|statushandoff|getcompactionthroughput|getstreamthroughput|listsnapshots|getendpoints|toppartitions|viewbuildstatus)$/.test(
        o[0]!.value,
      )
    );
  },
});
// fail2ban's client: the status and get forms report; set, ban, unban, reload, start and stop act,
// and -i is a prompt that runs the commands on its stdin.
spec("fail2ban-client", {
  valued: ["-c", "-s", "-p", "--timeout"],
  deny: ["-i", "--interactive"],
  bare: false,
  subs: { status: true, ping: true, version: true, banned: true, get: true, "--dp": true, "--dump": true },
});
spec("consul", {
  subs: {
    members: true,
    info: true,
    version: true,
    catalog: { subs: subsOf(["services", "nodes", "datacenters"]) },
    operator: { subs: { raft: { subs: subsOf(["list-peers"]) } } },
  },
});
spec("vault", {
  subs: {
    kv: { subs: { get: true, list: true, metadata: { subs: subsOf(["get"]) } } },
    status: true,
    version: true,
    list: true,
    token: { subs: subsOf(["lookup"]) },
    secrets: { subs: subsOf(["list"]) },
    auth: { subs: subsOf(["list"]) },
    policy: { subs: subsOf(["list", "read"]) },
    operator: { subs: { raft: { subs: subsOf(["list-peers"]) }, members: true } },
  },
});
spec("patronictl", {
  valued: ["-c", "--config-file"],
  subs: subsOf(["list", "topology", "history", "show-config", "version"]),
});
spec("istioctl", {
  subs: {
    "proxy-status": true,
    ps: true,
    "proxy-config": true,
    pc: true,
    analyze: true,
    version: true,
    x: { subs: subsOf(["describe"]) },
  },
});
spec("cilium", {
  subs: {
    status: true,
    version: true,
    connectivity: { check: () => false },
    endpoint: { subs: subsOf(["list", "get"]) },
    service: { subs: subsOf(["list", "get"]) },
    bpf: { check: (args) => args.some((w) => w.value === "list") },
  },
});
spec("calicoctl", {
  // ipam check writes its report with -o.
  deny: ["-o", "--output"],
  subs: {
    get: true,
    node: { subs: subsOf(["status", "checksystem"]) },
    version: true,
    ipam: { subs: subsOf(["show", "check"]) },
  },
});
spec("varnishstat", { check: (args) => args.some((w) => /^-[A-Za-z]*[1jx]/.test(w.value)) });
spec("varnishadm", {
  check: (args) => {
    const o = operands(args, ["-T", "-S", "-n", "-t"]);
    return (
      o.length > 0 &&
      /^(?:status|backend\.list|vcl\.list|param\.show|ping|banner|storage\.list|panic\.show)$/.test(
        o[0]!.value,
      )
    );
  },
});

export const SERVICE_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
