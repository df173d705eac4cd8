import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";
import { krew } from "./platform-addons.js";

/**
 * Infrastructure. Destroying provisioned resources, namespaces, volumes or
 * clusters is Tier 3 (infrastructure_destruction): their data does not come
 * back with a re-apply. Changing them is Tier 2 (container_change for
 * containers and Kubernetes, infrastructure_change for IaC and cloud CLIs).
 */

const DESTROY = hit(3, "infrastructure_destruction");
const CONTAINER = hit(2, "container_change");
const INFRA = hit(2, "infrastructure_change");

/** What one terraform command does (`ops` lower-cased, the command first). */
function terraformCommand(ops: readonly string[], args: Args): Hit | null {
  const sub = ops[0];
  if (sub === "destroy") return DESTROY;
  if (sub === "apply") {
    // -replace destroys the named resource and creates it again: whatever it held is gone.
    return args.values.some((v) => /^--?destroy$|^--?replace(?:=|$)/.test(v)) ? DESTROY : INFRA;
  }
  if (sub === "state") return /^(?:list|show|pull)$/.test(ops[1] ?? "") ? null : INFRA;
  if (sub === "workspace") return ops[1] === "delete" || ops[1] === "new" ? INFRA : null;
  return /^(?:import|taint|untaint|force-unlock|refresh)$/.test(sub ?? "") ? INFRA : null;
}

function terraform({ name, args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  if (name !== "terragrunt") return terraformCommand(ops, args);
  // terragrunt runs a terraform command alone, over every unit (`run-all`, `run --all`, the older
  // `apply-all`) or a stack's (`stack run`); a plan stays a plan.
  if (ops.some((o) => o === "destroy" || o === "destroy-all")) return DESTROY;
  const at = ops.findIndex((o) => TERRAFORM_COMMAND.test(o));
  return at < 0 ? null : terraformCommand([ops[at]!.replace(/-all$/, ""), ...ops.slice(at + 1)], args);
}

/** terraform's commands, as terragrunt passes them on (the older `-all` forms included). */
const TERRAFORM_COMMAND =
  /^(?:apply|plan|import|taint|untaint|force-unlock|refresh|state|workspace|output|validate|init|show|graph|providers|console|fmt|test)(?:-all)?$/;

/** pulumi options whose value is the next word. */
const PULUMI_VALUED = new Set(["-s", "--stack", "-C", "--cwd", "--color", "-v", "--config-file"]);

/** pulumi: an update, refresh or import changes resources; a preview only plans one (Tier 1). */
function pulumi({ args }: RuleInput): Hit | null {
  const found = args.subcommand(PULUMI_VALUED);
  if (found === null) return null;
  const sub = found.value.toLowerCase();
  const next = args
    .from(found.index + 1)
    .subcommand(PULUMI_VALUED)
    ?.value.toLowerCase();
  if (sub === "destroy" || (sub === "stack" && next === "rm")) return DESTROY;
  if (/^(?:up|update|refresh|import|cancel|watch)$/.test(sub)) return INFRA;
  // A state edit changes what pulumi believes exists; a stack import replaces its state.
  if (sub === "state") return next !== undefined ? INFRA : null;
  if (sub === "stack") return /^(?:import|rename|change-secrets-provider)$/.test(next ?? "") ? INFRA : null;
  if (sub === "deployment") return next === "run" ? INFRA : null;
  return sub === "plugin" && (next === "install" || next === "rm") ? hit(2, "package_change") : null;
}

/** kubectl global options whose value is the next word (shared with the carriers). */
export const KUBE_VALUED: ReadonlySet<string> = new Set([
  "-n",
  "--namespace",
  "--context",
  "--cluster",
  "--kubeconfig",
  "-s",
  "--server",
  "--user",
  "--token",
  "--as",
  "--as-group",
  "--request-timeout",
  "-v",
]);

const KUBE_BROAD =
  /^(?:ns|namespaces?|pv|persistentvolumes?|pvc|persistentvolumeclaims?|no|nodes?|crds?|customresourcedefinitions?)$/;

/** Pods: a controller starts a replacement, so deleting one by name or label is how a pod is restarted. */
const KUBE_POD = /^(?:po|pods?)$/;

/**
 * `kubectl delete`: every resource it names is gone with its configuration
 * and, for volumes, namespaces and stateful sets, its data (Tier 3). Pods,
 * named or selected by label, are the exception: their controller replaces
 * them (Tier 2, docs/wire-contract.md §5.7 keeps `kubectl delete pod x` there).
 * What a manifest (`-f`, `-k`) names is not visible, so it counts as any resource.
 */
function kubeDelete(a: Args): Hit {
  if (a.long("all") || a.long("all-namespaces") || a.short("A")) return DESTROY;
  if (a.optionValue("-f", "--filename", "-k", "--kustomize") !== undefined) return DESTROY;
  const ops = a.operands();
  if (ops.length === 0) return CONTAINER;
  for (const v of ops) {
    const kinds = v.toLowerCase().split("/")[0]!.split(",");
    if (kinds.some((k) => KUBE_BROAD.test(k.split(".")[0]!))) return DESTROY;
  }
  // `kubectl delete pod a b`, `kubectl delete pod/a pod/b`: the kind is the first word or each prefix.
  const first = ops[0]!.toLowerCase();
  const pods = first.includes("/")
    ? ops.every((o) => KUBE_POD.test(o.toLowerCase().split("/")[0]!.split(".")[0]!))
    : first.split(",").every((k) => KUBE_POD.test(k.split(".")[0]!));
  return pods ? CONTAINER : DESTROY;
}

function kubectl({ args }: RuleInput): Hit | null {
  const found = args.subcommand(KUBE_VALUED);
  if (found === null) return null;
  const verb = found.value.toLowerCase();
  const rest = args.from(found.index + 1);
  if (verb === "delete") return kubeDelete(rest);
  // `kubectl krew …` is the kubectl-krew plugin, judged as itself.
  if (verb === "krew") return krew({ name: "kubectl-krew", path: "kubectl-krew", args: rest, stdin: null });
  const changes = [
    "apply",
    "create",
    "replace",
    "patch",
    "edit",
    "scale",
    "rollout",
    "set",
    "label",
    "annotate",
    "expose",
    "autoscale",
    "cordon",
    "uncordon",
    "drain",
    "taint",
    "run",
    "cp",
    "debug",
  ];
  return changes.includes(verb) ? CONTAINER : null;
}

/**
 * `helm uninstall` deletes every resource of the release, its secrets and
 * config maps and, with most charts, the volumes its stateful sets claimed:
 * Tier 3. Installing, upgrading and rolling back are Tier 2.
 */
function helm({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(KUBE_VALUED)?.value.toLowerCase();
  if (verb === undefined) return null;
  if (["uninstall", "delete", "del", "un", "remove"].includes(verb)) return DESTROY;
  return ["install", "upgrade", "rollback"].includes(verb) ? CONTAINER : null;
}

/** eksctl: `delete` removes clusters, node groups and their nodes; create, scale, upgrade change them. */
function eksctl({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === "delete") return DESTROY;
  const changes = ["create", "upgrade", "scale", "update", "set", "unset", "drain", "enable", "register"];
  return verb !== undefined && changes.includes(verb) ? INFRA : null;
}

/** kubeadm: `reset` wipes the node's cluster state (etcd data on a control plane); init, join, upgrade change it. */
function kubeadm({ args }: RuleInput): Hit | null {
  const found = args.subcommand(new Set(["--kubeconfig", "--rootfs", "-v", "--v"]));
  if (found === null) return null;
  const verb = found.value.toLowerCase();
  if (verb === "reset") return DESTROY;
  const next = args
    .from(found.index + 1)
    .subcommand()
    ?.value.toLowerCase();
  if (verb === "init" || verb === "join") return INFRA;
  if (verb === "upgrade") return next === "apply" || next === "node" ? INFRA : null;
  if (verb === "certs") return next === "renew" ? INFRA : null;
  if (verb === "token") return next === "create" || next === "delete" ? INFRA : null;
  return null;
}

const DOCKER_VALUED = new Set(["-H", "--host", "-c", "--context", "--config", "-l", "--log-level"]);

const DOCKER_READS = new Set([
  "ps",
  "images",
  "image ls",
  "logs",
  "inspect",
  "version",
  "info",
  "stats",
  "top",
  "events",
  "history",
  "search",
  "port",
  "diff",
  "ls",
  "list",
  "config",
  "exec",
  "login",
  "logout",
  "help",
  // Pulling an image only adds it to the local store, as a download adds a file.
  "pull",
]);

function compose(a: Args): Hit | null {
  const verb = a.subcommand(new Set(["-f", "--file", "-p", "--project-name", "--profile", "--env-file"]));
  if (verb === null) return null;
  const v = verb.value.toLowerCase();
  const rest = a.from(verb.index + 1);
  if (v === "down" && (rest.short("v") || rest.long("volumes"))) return DESTROY;
  return DOCKER_READS.has(v) ? null : CONTAINER;
}

function docker({ name, args }: RuleInput): Hit | null {
  if (name === "docker-compose" || name === "podman-compose") return compose(args);
  const found = args.subcommand(DOCKER_VALUED);
  if (found === null) return null;
  const sub = found.value.toLowerCase();
  const rest = args.from(found.index + 1);
  if (sub === "compose") return compose(rest);
  const verb = rest.subcommand()?.value.toLowerCase();
  if (sub === "volume") {
    if (verb === "rm" || verb === "remove" || verb === "prune") return DESTROY;
    return verb === "create" ? CONTAINER : null;
  }
  if (sub === "system") return verb === "prune" ? DESTROY : verb === "reset" ? DESTROY : null;
  if (
    [
      "container",
      "image",
      "network",
      "builder",
      "buildx",
      "swarm",
      "service",
      "stack",
      "secret",
      "node",
      "pod",
      "machine",
      "plugin",
      "context",
      "manifest",
    ].includes(sub)
  ) {
    if (verb === undefined || DOCKER_READS.has(verb) || verb === "inspect") return null;
    if (sub === "container" && forcedMassRemoval(verb, rest.from(1))) return DESTROY;
    return CONTAINER;
  }
  if (forcedMassRemoval(sub, rest)) return DESTROY;
  return DOCKER_READS.has(sub) ? null : CONTAINER;
}

/**
 * `docker rm -f $(docker ps -aq)`: forced removal of containers the call does not name (a
 * substitution or variable), running ones included, with their writable layers.
 */
function forcedMassRemoval(verb: string, rest: Args): boolean {
  if (verb !== "rm" && verb !== "remove") return false;
  return (rest.short("f") || rest.long("force")) && rest.words.some((w) => w.dynamic);
}

/** vagrant: machines brought up, halted or provisioned; boxes and plugins are packages it installs. */
function vagrant({ args }: RuleInput): Hit | null {
  const [verb, next] = args.operands().map((v) => v.toLowerCase());
  if (verb === "destroy" || (verb === "snapshot" && next === "delete")) return DESTROY;
  if (verb === "box" || verb === "plugin") {
    return /^(?:add|update|remove|prune|install|uninstall|expunge|repair)$/.test(next ?? "")
      ? hit(2, "package_change")
      : null;
  }
  if (verb === "snapshot") return /^(?:save|push|restore|pop)$/.test(next ?? "") ? INFRA : null;
  return /^(?:up|halt|reload|provision|suspend|resume|package)$/.test(verb ?? "") ? INFRA : null;
}

function virsh({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(new Set(["-c", "--connect"]))?.value.toLowerCase();
  if (verb === undefined) return null;
  if (verb === "vol-delete" || verb === "pool-delete" || verb === "vol-wipe") return DESTROY;
  if (verb === "undefine") return args.long("remove-all-storage") || args.long("storage") ? DESTROY : INFRA;
  // `destroy` pulls the guest's power cord and `reset` presses its reset button: unsaved data is lost.
  if (verb === "destroy" || verb === "reset") return hit(3, "power_kernel");
  const changes = ["shutdown", "reboot", "start", "suspend", "define", "create", "edit"];
  return changes.includes(verb) ? INFRA : null;
}

function containersLxc({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === "delete" || verb === "rm" || verb === "purge") return DESTROY;
  const changes = [
    "launch",
    "start",
    "stop",
    "restart",
    "create",
    "init",
    "exec",
    "copy",
    "move",
    "snapshot",
    "restore",
  ];
  return verb !== undefined && changes.includes(verb) ? CONTAINER : null;
}

function multipass({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === "purge" || (verb === "delete" && (args.short("p") || args.long("purge")))) return DESTROY;
  const changes = ["delete", "launch", "start", "stop", "restart", "suspend", "recover"];
  return verb !== undefined && changes.includes(verb) ? CONTAINER : null;
}

function localCluster({ args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  if (ops.includes("delete")) return DESTROY;
  return ops.some((o) => ["create", "start", "stop"].includes(o)) ? CONTAINER : null;
}

/** The verbs of cloud operations that change remote state (`authorize-security-group-ingress`, `invoke`). */
const CLOUD_CHANGE = new RegExp(
  "^(?:(?:create|update|deploy|set|stop|start|reboot|restart|resize|apply|put|modify|run|attach|detach|add|authorize|revoke|associate|disassociate|enable|disable|import|export|replace|release|allocate|publish|invoke|execute|upload|restore|promote|failover|reset|rotate|grant|suspend|resume|increase|decrease|purchase|activate|deactivate|scale|upgrade|migrate)(?:-|$)" +
    // Words that are also the names of command groups (`az lock list`, `az tag list`) act only as
    // an operation's first word.
    "|(?:tag|untag|lock|unlock|copy|move|rename|request|send|accept|reject|assign|unassign|cancel|submit|register)-)",
);

/** Cloud CLIs name their verbs as words (`gcloud compute instances delete`) or prefixes (`aws ec2 terminate-instances`). */
function cloud({ name, args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  const destructive = (o: string) =>
    /^(?:delete|destroy|terminate|purge|remove|rb|deregister)(?:-|$)/.test(o) || o === "rm" || o === "del";
  if (name === "aws" && ops[0] === "s3") {
    if ((ops[1] === "rm" && args.long("recursive")) || (ops[1] === "rb" && args.long("force")))
      return DESTROY;
    if (ops[1] === "sync" && args.long("delete")) return DESTROY;
    if (ops[1] === "rm" || ops[1] === "rb" || ops[1] === "mv" || ops[1] === "mb") return INFRA;
    // `aws s3 cp|sync SRC s3://…` writes (or overwrites) objects; to a local path it downloads.
    const dest = ops[ops.length - 1];
    return (ops[1] === "cp" || ops[1] === "sync") && ops.length >= 4 && dest?.startsWith("s3://") === true
      ? INFRA
      : null;
  }
  if (ops.some(destructive)) return DESTROY;
  // Commands that only write the client's own configuration (a kubeconfig entry, a profile, a login).
  if (name === "aws" && (ops[0] === "configure" || ops[0] === "sso" || ops.includes("update-kubeconfig")))
    return null;
  return ops.some((o) => CLOUD_CHANGE.test(o)) ? INFRA : null;
}

export const INFRA_RULES = table([
  [["terraform", "tofu", "terragrunt"], terraform],
  ["pulumi", pulumi],
  [["kubectl", "oc", "k3s", "microk8s.kubectl"], kubectl],
  ["helm", helm],
  ["eksctl", eksctl],
  ["kubeadm", kubeadm],
  [["docker", "podman", "nerdctl", "docker-compose", "podman-compose", "finch"], docker],
  ["vagrant", vagrant],
  ["virsh", virsh],
  [["lxc", "incus"], containersLxc],
  ["multipass", multipass],
  [["kind", "minikube", "k3d"], localCluster],
  [["aws", "gcloud", "az", "doctl", "hcloud", "linode-cli", "openstack", "oci", "ibmcloud", "scw"], cloud],
]);
