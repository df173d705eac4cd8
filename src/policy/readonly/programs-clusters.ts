import { subsOf, tablePart } from "./define.js";
import { KREW } from "./programs-addons.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Containers and clusters: docker, podman, crictl, ctr, kubectl, helm,
 * etcdctl in their reporting forms. An option that points the client at
 * another configuration (a Docker config's credential helper, a kubeconfig's
 * exec plugin) is not proven.
 */

const { entries, spec } = tablePart();

// Containers. --config points the client at another credential-helper configuration.
const CONTAINER_CLI: ReadSpec = {
  valued: ["-H", "--host", "--context", "-c", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"],
  deny: ["--config"],
  subs: {
    ps: true,
    images: true,
    inspect: true,
    logs: true,
    stats: true,
    top: true,
    port: true,
    diff: true,
    history: true,
    info: true,
    version: true,
    events: true,
    search: true,
    container: { subs: subsOf(["ls", "list", "ps", "inspect", "logs", "top", "port", "diff", "stats"]) },
    image: { subs: subsOf(["ls", "list", "inspect", "history"]) },
    volume: { subs: subsOf(["ls", "list", "inspect"]) },
    network: { subs: subsOf(["ls", "list", "inspect"]) },
    node: { subs: subsOf(["ls", "list", "inspect", "ps"]) },
    service: { subs: subsOf(["ls", "list", "inspect", "logs", "ps"]) },
    stack: { subs: subsOf(["ls", "list", "ps", "services"]) },
    secret: { subs: subsOf(["ls", "list", "inspect"]) },
    config: { subs: subsOf(["ls", "list", "inspect"]) },
    context: { subs: subsOf(["ls", "list", "inspect", "show"]) },
    system: { subs: subsOf(["df", "info", "events"]) },
    buildx: { subs: subsOf(["ls", "inspect", "du", "version"]) },
    compose: {
      valued: ["-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory"],
      subs: subsOf(["ps", "logs", "config", "ls", "images", "top", "version", "port", "events"]),
    },
    pod: { subs: subsOf(["ps", "ls", "list", "inspect", "logs", "top", "stats"]) },
    machine: { subs: subsOf(["ls", "list", "inspect", "info"]) },
  },
};
spec("docker", CONTAINER_CLI);
spec("podman", CONTAINER_CLI);
spec("nerdctl", CONTAINER_CLI);
spec("docker-compose", CONTAINER_CLI.subs!.compose as ReadSpec);
spec("crictl", {
  valued: ["-r", "--runtime-endpoint", "-i", "--image-endpoint", "-t", "--timeout", "--config"],
  deny: ["--config"],
  subs: subsOf([
    "ps",
    "pods",
    "images",
    "img",
    "inspect",
    "inspectp",
    "inspecti",
    "logs",
    "stats",
    "statsp",
    "info",
    "version",
    "imagefsinfo",
  ]),
});
spec("ctr", {
  valued: ["-n", "--namespace", "-a", "--address"],
  subs: {
    containers: { subs: subsOf(["ls", "list", "info"]) },
    c: { subs: subsOf(["ls", "list", "info"]) },
    images: { subs: subsOf(["ls", "list", "check"]) },
    i: { subs: subsOf(["ls", "list", "check"]) },
    tasks: { subs: subsOf(["ls", "list", "ps", "metrics"]) },
    t: { subs: subsOf(["ls", "list", "ps", "metrics"]) },
    namespaces: { subs: subsOf(["ls", "list"]) },
    version: true,
    plugins: { subs: subsOf(["ls", "list"]) },
  },
});

// Kubernetes. -o is an output format here, not a file; --kubeconfig points at another exec plugin.
const KUBE_VALUED = [
  "-n",
  "--namespace",
  "-l",
  "--selector",
  "-o",
  "--output",
  "--context",
  "--cluster",
  "--user",
  "-c",
  "--container",
  "-f",
  "--filename",
  "--since",
  "--tail",
  "-L",
  "--label-columns",
  "--field-selector",
  "--sort-by",
  "--template",
  "-s",
  "--server",
  "--as",
  "--as-group",
  "--request-timeout",
  "--since-time",
  "--limit-bytes",
  "--max-log-requests",
  "--subresource",
  "--chunk-size",
  "--show-kind",
  "--raw",
  "--for",
  "--timeout",
  "--containers",
];
// kustomize's exec functions, alpha plugins and helm inflation run programs.
const KUBE_DENY = [
  "--kubeconfig",
  "--token",
  "--exec",
  "--output-directory",
  "--local",
  "--enable-exec",
  "--enable-alpha-plugins",
  "--enable-helm",
  "--helm-command",
];
spec("kubectl", {
  valued: KUBE_VALUED,
  deny: KUBE_DENY,
  subs: {
    get: true,
    describe: true,
    logs: true,
    log: true,
    top: { subs: subsOf(["node", "nodes", "no", "pod", "pods", "po"]) },
    explain: true,
    "api-resources": true,
    "api-versions": true,
    version: true,
    "cluster-info": true,
    events: true,
    auth: { subs: subsOf(["can-i", "whoami"]) },
    config: { subs: subsOf(["view", "get-contexts", "current-context", "get-clusters", "get-users"]) },
    rollout: { subs: subsOf(["status", "history"]) },
    wait: true,
    // A server-side dry run compared with the live objects; KUBECTL_EXTERNAL_DIFF is not a safe variable.
    diff: true,
    kustomize: true,
    plugin: { subs: subsOf(["list"]) },
    // `kubectl krew` runs the kubectl-krew plugin: its listings read.
    krew: KREW,
    completion: true,
    certificate: { check: () => false },
  },
});
entries.set("oc", entries.get("kubectl")!);
spec("helm", {
  valued: [
    "-n",
    "--namespace",
    "--kube-context",
    "-o",
    "--output",
    "--revision",
    "--max",
    "-f",
    "--values",
    "--set",
    "--version",
    "--repo",
  ],
  deny: ["--kubeconfig", "--post-renderer", "--post-renderer-args"],
  subs: {
    list: true,
    ls: true,
    status: true,
    history: true,
    hist: true,
    get: { subs: subsOf(["all", "values", "manifest", "notes", "hooks", "metadata"]) },
    show: { subs: subsOf(["all", "chart", "values", "readme", "crds"]) },
    inspect: true,
    search: { subs: subsOf(["repo", "hub"]) },
    version: true,
    env: true,
    template: true,
    lint: true,
    verify: true,
    dependency: { subs: subsOf(["list", "ls"]) },
    dep: { subs: subsOf(["list", "ls"]) },
    repo: { subs: subsOf(["list", "ls"]) },
    plugin: { subs: subsOf(["list", "ls"]) },
  },
});
spec("k9s", { check: () => false });
spec("kubectx", {
  check: (args) => args.length === 0 || args.every((w) => w.value === "-c" || w.value === "--current"),
});
spec("kubens", {
  check: (args) => args.length === 0 || args.every((w) => w.value === "-c" || w.value === "--current"),
});
// etcd. `check perf` and `check datascale` measure by writing keys into the cluster; `watch`
// runs the command given after the key and its range end on every event, and -i reads watches
// (and their commands) from stdin.
spec("etcdctl", {
  valued: ["--endpoints", "--cacert", "--cert", "--key", "-w", "--write-out", "--user"],
  subs: {
    get: true,
    endpoint: { subs: subsOf(["health", "status", "hashkv"]) },
    member: { subs: subsOf(["list"]) },
    alarm: { subs: subsOf(["list"]) },
    version: true,
    user: { subs: subsOf(["list", "get"]) },
    role: { subs: subsOf(["list", "get"]) },
    auth: { subs: subsOf(["status"]) },
    lease: { subs: subsOf(["list", "timetolive"]) },
    snapshot: { subs: subsOf(["status"]) },
    watch: {
      deny: ["-i", "--interactive"],
      check: (args) => !args.some((w) => w.value === "--") && operands(args, ["--rev"]).length <= 2,
    },
  },
});

export const CLUSTER_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
