import { NODETOOL_VALUED } from "../rules/option-lists.js";
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
// RabbitMQ's CLIs: the listing and status commands report (`help CMD` prints a command's usage);
// `eval` runs Erlang code, and `remote_shell` and `observer` are consoles on stdin.
const RABBITMQ_VALUED = ["-n", "--node", "-p", "--vhost", "-t", "--timeout", "--erlang-cookie"];
const RABBITMQCTL_READS =
  /^(?:list_\w+|status|cluster_status|environment|report|node_health_check|version|ping|await_startup|help)$/;
spec("rabbitmqctl", {
  check: (args) => {
    const o = operands(args, RABBITMQ_VALUED);
    return o.length > 0 && !o[0]!.dynamic && RABBITMQCTL_READS.test(o[0]!.value);
  },
});
spec("rabbitmq-diagnostics", {
  check: (args) => {
    const o = operands(args, RABBITMQ_VALUED);
    return (
      o.length > 0 &&
      !o[0]!.dynamic &&
      !/^(?:set_|enable|disable|force|log_level|eval|remote_shell|observer)/.test(o[0]!.value)
    );
  },
});
spec("rabbitmq-plugins", {
  valued: RABBITMQ_VALUED,
  subs: subsOf(["list", "directories", "is_enabled"]),
});
// Cassandra's nodetool: the getters, status, statistics and description commands report;
// `clientstats --clear-history` clears what it reports.
const NODETOOL_READS =
  /^(?:get[a-z]+|status[a-z]*|describe[a-z]+|[a-z]*stats|[a-z]*histograms|info|ring|version|gossipinfo|compactionhistory|netstats|listsnapshots|listpendinghints|toppartitions|profileload|viewbuildstatus|failuredetector|datapaths|rangekeysample|help)$/;
spec("nodetool", {
  deny: ["--clear-history"],
  check: (args) => {
    const o = operands(args, [...NODETOOL_VALUED]);
    return o.length > 0 && !o[0]!.dynamic && NODETOOL_READS.test(o[0]!.value);
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
// Consul: the key-value store read and exported to stdout, the catalog, ACLs, intentions and
// configuration entries listed or read. `watch` runs a handler, `exec` a command on every node.
const CONSUL_READS = subsOf(["list", "read"]);
spec("consul", {
  subs: {
    members: true,
    info: true,
    version: true,
    monitor: true,
    rtt: true,
    kv: { subs: subsOf(["get", "export"]) },
    catalog: { subs: subsOf(["services", "nodes", "datacenters"]) },
    acl: {
      subs: {
        token: { subs: CONSUL_READS },
        policy: { subs: CONSUL_READS },
        role: { subs: CONSUL_READS },
        "auth-method": { subs: CONSUL_READS },
        "binding-rule": { subs: CONSUL_READS },
      },
    },
    intention: { subs: subsOf(["list", "get", "check", "match"]) },
    config: { subs: CONSUL_READS },
    peering: { subs: CONSUL_READS },
    snapshot: { subs: subsOf(["inspect"]) },
    operator: {
      subs: {
        raft: { subs: subsOf(["list-peers"]) },
        autopilot: { subs: subsOf(["get-config", "state"]) },
      },
    },
  },
});
/**
 * Vault: status, listings, lookups and kv reads. `vault read` is not proven: on a dynamic secrets
 * engine (`database/creds/x`, `aws/creds/x`) a read creates a login. -wrap-ttl wraps the answer
 * in a new token.
 */
spec("vault", {
  deny: ["-wrap-ttl", "--wrap-ttl"],
  subs: {
    kv: { subs: { get: true, list: true, metadata: { subs: subsOf(["get"]) } } },
    status: true,
    version: true,
    "version-history": true,
    list: true,
    monitor: true,
    "path-help": true,
    print: { subs: subsOf(["token"]) },
    token: { subs: subsOf(["lookup", "capabilities"]) },
    lease: { subs: subsOf(["lookup"]) },
    secrets: { subs: subsOf(["list"]) },
    auth: { subs: subsOf(["list"]) },
    audit: { subs: subsOf(["list"]) },
    plugin: { subs: subsOf(["list", "info"]) },
    namespace: { subs: subsOf(["list", "lookup"]) },
    policy: { subs: subsOf(["list", "read"]) },
    pki: { subs: subsOf(["health-check", "list-intermediates", "verify-sign"]) },
    operator: {
      subs: {
        raft: { subs: { "list-peers": true, autopilot: { subs: subsOf(["state", "get-config"]) } } },
        members: true,
        "key-status": true,
        usage: true,
      },
    },
  },
});
spec("patronictl", {
  valued: ["-c", "--config-file"],
  subs: subsOf(["list", "topology", "history", "show-config", "version"]),
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
      /^(?:status|backend\.list|vcl\.list|vcl\.show|ban\.list|param\.show|ping|banner|storage\.list|panic\.show)$/.test(
        o[0]!.value,
      )
    );
  },
});

export const SERVICE_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
