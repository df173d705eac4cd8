import { subsOf, tablePart } from "./define.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Kubernetes add-ons and service meshes in their reporting forms: the mesh clients' status,
 * configuration dumps and analyses, manifests printed for a pipe into kubectl, plugins listed,
 * logs tailed, secrets sealed to stdout. Each refuses `--kubeconfig` (an exec credential plugin
 * is code) and the options that write a file or set something on a proxy. helmfile and skaffold
 * are not here: helmfile's templates run commands through `exec` and its hooks, and skaffold's
 * configuration names build and deploy scripts, so even their reading commands run code the call
 * does not show, as terragrunt's do. programs-platform.ts adds these entries to its part.
 */

const { entries, spec } = tablePart();

const KUBECONFIG = ["--kubeconfig"];

/** `proxy-config log` and `admin log` set a proxy's or istiod's log levels when given one. */
const LOG_LEVELS: ReadSpec = { deny: ["--level", "--reset", "--stack-trace-level"] };
const PROXY_CONFIG: ReadSpec = {
  subs: {
    ...subsOf(["all", "bootstrap", "ecds", "rootca-compare"]),
    // Each dump by its name, its plural and its short alias.
    ...subsOf(["cluster", "clusters", "c", "endpoint", "endpoints", "ep", "listener", "listeners", "l"]),
    ...subsOf(["route", "routes", "r", "secret", "secrets", "s"]),
    log: LOG_LEVELS,
  },
};
const ISTIO_EXPERIMENTAL: ReadSpec = { subs: subsOf(["describe", "precheck", "check-inject"]) };

// istioctl: -c is its --kubeconfig; kube-inject and manifest generate write a file with -o.
spec("istioctl", {
  valued: ["-i", "--istioNamespace", "-n", "--namespace", "--context", "--vklog"],
  deny: [...KUBECONFIG, "-c"],
  subs: {
    ...subsOf(["analyze", "proxy-status", "ps", "version", "verify-install", "remote-clusters", "validate"]),
    "proxy-config": PROXY_CONFIG,
    pc: PROXY_CONFIG,
    "ztunnel-config": {
      subs: subsOf(["all", "certificate", "connections", "policy", "service", "workload"]),
    },
    x: ISTIO_EXPERIMENTAL,
    experimental: ISTIO_EXPERIMENTAL,
    "kube-inject": { deny: ["-o", "--output"] },
    manifest: { subs: { generate: { deny: ["-o", "--output"] } } },
    profile: { subs: subsOf(["list", "dump", "diff"]) },
    tag: { subs: subsOf(["list"]) },
    waypoint: { subs: subsOf(["list", "status"]) },
    admin: { subs: { log: LOG_LEVELS } },
  },
});

/**
 * linkerd changes nothing itself: `install`, `upgrade`, `uninstall`, `inject` and `prune` print
 * the manifests that a `kubectl apply` or `kubectl delete` after the pipe acts on (that command
 * is judged on its own). `dashboard` starts a port-forward and a browser and is not here.
 */
const LINKERD_EXTENSION = ["check", "install", "uninstall", "prune"];
spec("linkerd", {
  valued: ["--context", "-L", "--linkerd-namespace", "--as", "--as-group", "--api-addr", "--cni-namespace"],
  deny: KUBECONFIG,
  subs: {
    ...subsOf([...LINKERD_EXTENSION, "version", "upgrade", "install-cni", "inject", "uninject", "profile"]),
    ...subsOf(["identity", "authz", "completion"]),
    diagnostics: { subs: subsOf(["proxy-metrics", "controller-metrics", "endpoints", "policy", "profile"]) },
    viz: {
      subs: subsOf([
        ...LINKERD_EXTENSION,
        "stat",
        "top",
        "tap",
        "edges",
        "routes",
        "list",
        "profile",
        "authz",
      ]),
    },
    multicluster: { subs: subsOf([...LINKERD_EXTENSION, "gateways", "link", "unlink", "allow"]) },
    jaeger: { subs: subsOf([...LINKERD_EXTENSION, "list"]) },
  },
});

// krew, as itself or as the kubectl plugin binary: the installed plugins and the local index.
export const KREW: ReadSpec = {
  subs: { ...subsOf(["list", "info", "search", "version"]), index: { subs: subsOf(["list"]) } },
};
spec("krew", KREW);
spec("kubectl-krew", KREW);

// stern tails the logs of the pods it matches; --config names another stern configuration.
spec("stern", { deny: [...KUBECONFIG, "--config"] });

/**
 * kubeseal encrypts what arrives on stdin with the controller's public certificate and prints
 * it; `--fetch-cert` prints the certificate and `--recovery-unseal` prints the secrets a private
 * key opens. `--validate` and `--re-encrypt` send the sealed secret to the controller, and
 * `--sealed-secret-file` and `--merge-into` write a file.
 */
spec("kubeseal", {
  deny: [...KUBECONFIG, "-w", "--sealed-secret-file", "--merge-into", "--re-encrypt", "--validate"],
});

/**
 * kustomize renders in process; its exec and container functions, alpha plugins and helm
 * inflation run programs, and -o, --mount and `cfg cat --dest` write files. Of `cfg`, only the
 * commands that print are proven: older releases also format and set values in place.
 */
spec("kustomize", {
  deny: [
    "--enable-exec",
    "--enable-alpha-plugins",
    "--enable-star",
    "--enable-helm",
    "--helm-command",
    "-o",
    "--output",
    "--mount",
    "--dest",
  ],
  subs: {
    ...subsOf(["build", "version", "completion"]),
    cfg: { subs: subsOf(["cat", "count", "grep", "tree", "list-setters"]) },
  },
});

// kubeadm: --rootfs makes it read another root's kubeconfig and manifests.
spec("kubeadm", {
  deny: [...KUBECONFIG, "--rootfs"],
  subs: {
    version: true,
    upgrade: { subs: subsOf(["plan", "diff"]) },
    certs: { subs: subsOf(["check-expiration", "certificate-key"]) },
    token: { subs: subsOf(["list", "generate"]) },
    config: { subs: { print: true, images: { subs: subsOf(["list"]) } } },
  },
});

// tilt: the running session's objects and logs, read through its API server.
spec("tilt", {
  valued: ["--host", "--port"],
  deny: KUBECONFIG,
  subs: subsOf(["get", "describe", "logs", "version", "doctor", "api-resources"]),
});

// Crossplane's CLI: a resource's tree of composed resources, and their usage.
spec("crossplane", { deny: KUBECONFIG, subs: { version: true, beta: { subs: subsOf(["trace", "top"]) } } });

export const ADDON_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
