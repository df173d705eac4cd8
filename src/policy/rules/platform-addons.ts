import { type Hit, hit, type Rule, type RuleInput } from "./args.js";
import { judged, wordsOf } from "./delivery-forges.js";

/**
 * Kubernetes add-ons and service meshes. Installing, upgrading or re-tagging a mesh, and
 * deploying with helmfile, skaffold or tilt, change the cluster's workloads (Tier 2,
 * container_change); removing what they deployed with its custom resources or namespaces is
 * Tier 3 (infrastructure_destruction). Plugins and packages installed into kubectl or a cluster
 * are Tier 2 (package_change), and a proxy's log level set is Tier 2 (service_change).
 */

const WORKLOAD = hit(2, "container_change");
const GONE = hit(3, "infrastructure_destruction");
const PACKAGE = hit(2, "package_change");
const SCRIPT = hit(2, "script_file");

const ISTIO_VALUED = new Set([
  "-i",
  "--istioNamespace",
  "-n",
  "--namespace",
  "--context",
  "-c",
  "--kubeconfig",
]);

/**
 * istioctl: `uninstall --purge` removes every revision with Istio's custom resource definitions,
 * and so every custom resource of theirs (Tier 3); without it one control plane goes. Printing
 * forms (`kube-inject`, `manifest generate`) and `dashboard` stay Tier 1.
 */
function istioctl({ args }: RuleInput): Hit | null {
  const [group = "", verb = ""] = wordsOf(args, ISTIO_VALUED);
  const uninstall =
    group === "uninstall" || ((group === "x" || group === "experimental") && verb === "uninstall");
  if (uninstall) return args.long("purge") ? GONE : WORKLOAD;
  if (group === "install" || group === "upgrade" || (group === "manifest" && verb === "install"))
    return WORKLOAD;
  if (group === "operator") return verb === "init" || verb === "remove" ? WORKLOAD : null;
  if (group === "tag") return verb === "set" || verb === "remove" ? WORKLOAD : null;
  if (group === "waypoint") return verb === "apply" || verb === "delete" ? WORKLOAD : null;
  const logs = verb === "log" && /^(?:admin|proxy-config|pc|ztunnel-config)$/.test(group);
  return logs && (args.long("level") || args.long("reset") || args.long("stack-trace-level"))
    ? hit(2, "service_change")
    : null;
}

/** krew installs, upgrades and removes kubectl plugins, and adds or removes the indexes they come from. */
export function krew({ args }: RuleInput): Hit | null {
  const [verb = "", next = ""] = wordsOf(args, new Set());
  if (/^(?:install|uninstall|upgrade|remove)$/.test(verb)) return PACKAGE;
  return verb === "index" && (next === "add" || next === "remove") ? PACKAGE : null;
}

const HELMFILE_VALUED = new Set([
  "-f",
  "--file",
  "-e",
  "--environment",
  "-n",
  "--namespace",
  "--kube-context",
  "-l",
  "--selector",
  "--state-values-set",
  "--state-values-file",
  "-b",
  "--helm-binary",
  "--log-level",
  "-c",
  "--chart",
]);

/** helmfile: `destroy` and `delete` uninstall every release it names; `apply` and `sync` install and upgrade them. */
function helmfile({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(HELMFILE_VALUED)?.value;
  if (verb === "destroy" || verb === "delete") return GONE;
  if (verb === "apply" || verb === "sync" || verb === "test") return WORKLOAD;
  // `init` installs the helm plugins helmfile needs.
  return verb === "init" ? PACKAGE : null;
}

const SKAFFOLD_VALUED = new Set([
  "-f",
  "--filename",
  "-p",
  "--profile",
  "--kube-context",
  "-n",
  "--namespace",
  "-m",
]);

/** skaffold: building runs the configuration's builders and hooks; deploying changes the cluster. */
function skaffold({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(SKAFFOLD_VALUED)?.value ?? "";
  if (verb === "delete") return GONE;
  if (/^(?:run|dev|deploy|apply|debug|verify|exec)$/.test(verb)) return WORKLOAD;
  if (verb === "build") return args.long("dry-run") ? null : SCRIPT;
  return verb === "test" ? SCRIPT : null;
}

/** tilt: `up` and `ci` deploy what the Tiltfile names; `down --delete-namespaces` deletes their namespaces too. */
function tilt({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(new Set(["--host", "--port", "--context", "--file", "-f"]))?.value ?? "";
  if (verb === "down") return args.long("delete-namespaces") ? GONE : WORKLOAD;
  return /^(?:up|ci|trigger|enable|disable|args|apply|create|patch|edit|delete)$/.test(verb)
    ? WORKLOAD
    : null;
}

/** Crossplane: packages (providers, configurations, functions) installed or updated in the cluster, or pushed. */
function crossplane({ args }: RuleInput): Hit | null {
  const words = wordsOf(args, new Set(["--context", "-n", "--namespace"]));
  if (words.slice(0, 2).some((w) => w === "install" || w === "update")) return PACKAGE;
  return words[0] === "xpkg" && words[1] === "push" ? hit(2, "remote_change") : null;
}

export const ADDON_RULES: [string | string[], Rule][] = [
  ["istioctl", judged(istioctl)],
  // linkerd's install, upgrade, uninstall and prune print manifests for the kubectl after the
  // pipe: nothing of its own acts, and knowing it keeps the generic verbs at Tier 2.
  ["linkerd", () => null],
  [["krew", "kubectl-krew"], judged(krew)],
  ["helmfile", judged(helmfile)],
  ["skaffold", judged(skaffold)],
  ["tilt", judged(tilt)],
  [["crossplane", "kubectl-crossplane"], judged(crossplane)],
];
