import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Infrastructure. Destroying provisioned resources, namespaces, volumes or
 * clusters is Tier 3 (infrastructure_destruction): their data does not come
 * back with a re-apply. Changing them is Tier 2 (container_change for
 * containers and Kubernetes, infrastructure_change for IaC and cloud CLIs).
 */

const DESTROY = hit(3, "infrastructure_destruction");
const CONTAINER = hit(2, "container_change");
const INFRA = hit(2, "infrastructure_change");

function terraform({ name, args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  const sub = ops[0];
  if (sub === undefined) return null;
  if (ops.includes("destroy") && (sub === "destroy" || name === "terragrunt")) return DESTROY;
  if (sub === "apply" || sub === "run-all") {
    return args.values.some((v) => /^--?destroy$/.test(v)) ? DESTROY : INFRA;
  }
  const changes = ["import", "taint", "untaint", "force-unlock", "state", "workspace", "refresh"];
  if (sub === "state" && (ops[1] === "list" || ops[1] === "show" || ops[1] === "pull")) return null;
  if (sub === "workspace" && ops[1] !== "delete" && ops[1] !== "new") return null;
  return changes.includes(sub) ? INFRA : null;
}

function pulumi({ args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  if (ops[0] === "destroy" || (ops[0] === "stack" && ops[1] === "rm")) return DESTROY;
  if (ops[0] === "up" || ops[0] === "update" || ops[0] === "refresh" || ops[0] === "import") return INFRA;
  if (ops[0] === "state" && (ops[1] === "delete" || ops[1] === "unprotect")) return INFRA;
  return null;
}

const KUBE_VALUED = new Set([
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

function kubeDelete(a: Args): Hit {
  if (a.long("all") || a.long("all-namespaces") || a.short("A")) return DESTROY;
  for (const v of a.operands()) {
    const kinds = v.toLowerCase().split("/")[0]!.split(",");
    if (kinds.some((k) => KUBE_BROAD.test(k.split(".")[0]!))) return DESTROY;
  }
  return CONTAINER;
}

function kubectl({ args }: RuleInput): Hit | null {
  const found = args.subcommand(KUBE_VALUED);
  if (found === null) return null;
  const verb = found.value.toLowerCase();
  const rest = args.from(found.index + 1);
  if (verb === "delete") return kubeDelete(rest);
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

function helm({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(KUBE_VALUED)?.value.toLowerCase();
  // An uninstalled release comes back with `helm install`; persistent volume claims survive it.
  const changes = ["install", "upgrade", "rollback", "uninstall", "delete", "del", "un", "remove"];
  return verb !== undefined && changes.includes(verb) ? CONTAINER : null;
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
    return CONTAINER;
  }
  return DOCKER_READS.has(sub) ? null : CONTAINER;
}

function vagrant({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === "destroy") return DESTROY;
  return verb !== undefined && ["up", "halt", "reload", "provision", "suspend", "resume"].includes(verb)
    ? INFRA
    : null;
}

function virsh({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(new Set(["-c", "--connect"]))?.value.toLowerCase();
  if (verb === undefined) return null;
  if (verb === "vol-delete" || verb === "pool-delete" || verb === "vol-wipe") return DESTROY;
  if (verb === "undefine") return args.long("remove-all-storage") || args.long("storage") ? DESTROY : INFRA;
  const changes = ["destroy", "shutdown", "reboot", "reset", "start", "suspend", "define", "create", "edit"];
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

/** Cloud CLIs name their verbs as words (`gcloud compute instances delete`) or prefixes (`aws ec2 terminate-instances`). */
function cloud({ name, args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  const destructive = (o: string) =>
    /^(?:delete|destroy|terminate|purge|remove|rb|deregister)(?:-|$)/.test(o) || o === "rm" || o === "del";
  if (name === "aws" && ops[0] === "s3") {
    if ((ops[1] === "rm" && args.long("recursive")) || (ops[1] === "rb" && args.long("force")))
      return DESTROY;
    if (ops[1] === "sync" && args.long("delete")) return DESTROY;
    return ops[1] === "rm" || ops[1] === "rb" || ops[1] === "mv" ? INFRA : null;
  }
  if (name === "gsutil" || name === "rclone") {
    const verb = ops[0];
    if (
      verb === "rb" ||
      verb === "purge" ||
      verb === "sync" ||
      ((verb === "rm" || verb === "delete") && args.short("ra"))
    )
      return DESTROY;
    return verb === "rm" || verb === "delete" || verb === "deletefile" || verb === "mv" || verb === "move"
      ? INFRA
      : null;
  }
  if (ops.some(destructive)) return DESTROY;
  const change =
    /^(?:create|update|deploy|set|stop|start|reboot|restart|resize|apply|put|modify|run|attach|detach|add)(?:-|$)/;
  return ops.some((o) => change.test(o)) ? INFRA : null;
}

export const INFRA_RULES = table([
  [["terraform", "tofu", "terragrunt"], terraform],
  ["pulumi", pulumi],
  [["kubectl", "oc", "k3s", "microk8s.kubectl"], kubectl],
  ["helm", helm],
  [["docker", "podman", "nerdctl", "docker-compose", "podman-compose", "finch"], docker],
  ["vagrant", vagrant],
  ["virsh", virsh],
  [["lxc", "incus"], containersLxc],
  ["multipass", multipass],
  [["kind", "minikube", "k3d"], localCluster],
  [
    [
      "aws",
      "gcloud",
      "az",
      "doctl",
      "hcloud",
      "linode-cli",
      "openstack",
      "oci",
      "ibmcloud",
      "scw",
      "gsutil",
      "rclone",
    ],
    cloud,
  ],
]);
