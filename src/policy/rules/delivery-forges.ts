import { type Args, type Hit, hit, type Rule, type RuleInput, table } from "./args.js";

/**
 * Code forges and GitOps controllers. On a forge, what a pull request, an
 * issue, a release or a run becomes is remote state others see: creating,
 * editing, commenting, re-running and cancelling are Tier 2 (remote_change),
 * merging is Tier 2 (vcs_change), and deleting a repository, a release or a
 * secret is Tier 3 (destructive_subcommand, the generic rule's own verdict for
 * such a verb). `gh api` and `glab api` are read like an HTTP client. A GitOps
 * sync applies a repository to a cluster (Tier 2, container_change); a prune or
 * a deleted application deletes the workloads it owned (Tier 3,
 * infrastructure_destruction).
 */

/** The operands of a command in order, lower-cased, without the values of the `valued` options. */
export function wordsOf(a: Args, valued: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < a.length; i++) {
    const v = a.values[i]!;
    if (i < a.optionEnd && v.startsWith("-") && v.length > 1) {
      if (valued.has(v)) i++;
    } else if (i !== a.optionEnd) out.push(v.toLowerCase());
  }
  return out;
}

/** Words a subcommand path is made of (`stream`, `add`, `deploy-key`). */
const PATH_WORD = /^[a-z][a-z0-9:_-]*$/;

/**
 * A request for help after plain subcommand words (`nats stream add --help`) prints help and
 * changes nothing; the generic rule lowers it only for the subcommand families, and these
 * rules give other bases too. A Tier-3 verdict stays for the generic rule to judge, which keeps
 * it when an object is named (docs/adr/0018-long-tail-subcommands.md).
 */
function helpAfterPath(a: Args): boolean {
  const last = a.values[a.length - 1];
  if (last === undefined || a.length > 4 || !/^(?:-h|--help|help)$/.test(last)) return false;
  return a.words.slice(0, -1).every((w) => !w.dynamic && !w.glob && PATH_WORD.test(w.value));
}

/** A rule whose Tier-2 verdicts give way to a help request after its subcommand path. */
export function judged(rule: Rule): Rule {
  return (input) => {
    const h = rule(input);
    return h !== null && h.tier <= 2 && helpAfterPath(input.args) ? null : h;
  };
}

const REMOTE = hit(2, "remote_change");
const MERGE = hit(2, "vcs_change");
const ACCESS = hit(2, "account_access");
const GONE = hit(3, "destructive_subcommand");

/** An API call: its method, or a body (fields, an input file) that makes it a POST. */
function forgeApi(a: Args, endpoint: string | undefined): Hit | null {
  let method: string | null = null;
  let body = false;
  for (let i = 0; i < a.optionEnd; i++) {
    const v = a.values[i]!;
    const m = /^--method(?:=(.*))?$/.exec(v) ?? /^-[A-Za-z]*?X(.*)$/.exec(v);
    if (m !== null) method = (m[1] || a.values[i + 1]) ?? "";
    else if (/^--(?:field|raw-field|input)(?:=|$)|^-[A-Za-z]*[fF]/.test(v)) body = true;
  }
  if (method !== null) {
    const upper = method.toUpperCase();
    if (upper === "DELETE") return hit(3, "remote_destruction");
    return upper === "GET" || upper === "HEAD" ? null : REMOTE;
  }
  // A GraphQL query is sent as a POST but only reads; a mutation writes.
  if (endpoint === "graphql" && !a.long("input"))
    return a.values.some((v) => /\bmutation\b/.test(v)) ? REMOTE : null;
  return body ? REMOTE : null;
}

/** Groups whose commands only touch the client's own login, configuration and aliases. */
const LOCAL_GROUPS = /^(?:auth|config|alias|completion|browse)$/;
/** Nested groups whose verb is the third word (`gh repo deploy-key add`). */
const NESTED = /^(?:deploy-key|autolink|gitignore|license|agent)$/;
/** Verbs that change what the forge holds: requests, issues, runs, repositories, releases. */
const CHANGES =
  /^(?:create|new|close|reopen|edit|update|comment|note|review|approve|revoke|ready|lock|unlock|pin|unpin|transfer|develop|rerun|retry|cancel|run|trigger|enable|disable|set|fork|rename|archive|unarchive|upload|add|item-add|item-edit|item-archive|field-create|link|unlink|copy|mark-template|subscribe|unsubscribe|play|mirror|stop|rebuild)$/;

/** gh and glab: pull and merge requests, issues, runs and pipelines, repositories, releases. */
function forge({ name, args }: RuleInput): Hit | null {
  const ops = wordsOf(args, new Set(["-R", "--repo", "--hostname"]));
  let [group, verb] = ops;
  if (group === "api") return forgeApi(args, verb);
  if (group === undefined || verb === undefined || LOCAL_GROUPS.test(group)) return null;
  if (NESTED.test(verb)) [group, verb] = [verb, ops[2] ?? ""];
  // `glab repo archive` downloads an archive; `gh repo archive` archives the repository.
  if (name === "glab" && group === "repo" && verb === "archive") return null;
  if (/^(?:ssh-key|gpg-key|deploy-key)$/.test(group)) return /^(?:add|delete)$/.test(verb) ? ACCESS : null;
  if (/^(?:extension|extensions|ext)$/.test(group)) {
    return /^(?:install|upgrade|remove)$/.test(verb) ? hit(2, "package_change") : null;
  }
  if (verb.split("-").includes("delete")) return group === "cache" ? REMOTE : GONE;
  // A forced checkout or sync resets the branch to the remote's, dropping commits only it had.
  if (/^(?:checkout|co|sync)$/.test(verb)) {
    if (args.short("f") || args.long("force")) return hit(3, "history_destruction");
    return verb === "sync" ? MERGE : null;
  }
  if (/^(?:merge|rebase|update-branch|revert)$/.test(verb)) return MERGE;
  // Cloning, downloading and choosing a default repository write only the local side.
  if (verb === "clone") return group === "label" ? REMOTE : null;
  return CHANGES.test(verb) ? REMOTE : null;
}

const CONTAINER = hit(2, "container_change");
const INFRA = hit(2, "infrastructure_change");
const DESTROY = hit(3, "infrastructure_destruction");

const ARGO_VALUED = new Set([
  "--server",
  "--auth-token",
  "--config",
  "--header",
  "-H",
  "--kube-context",
  "--grpc-web-root-path",
  "--port-forward-namespace",
  "--loglevel",
  "--logformat",
]);
/** Verbs that change Argo CD's projects, clusters, repositories and keys (`proj add-destination`). */
const ARGO_CONFIG =
  /^(?:create|add|rm|delete|set|edit|rotate-auth|update|enable|disable)$|^(?:add|remove|delete)-/;
const ARGO_APP =
  /^(?:sync|rollback|set|unset|patch|patch-resource|edit|create|update|terminate-op|add-source|remove-source|actions)$/;

/**
 * argocd: a sync applies the application's manifests and, with --prune, deletes what they no
 * longer name; deleting an application cascades to its resources unless told not to.
 */
function argocd({ args }: RuleInput): Hit | null {
  const [group, verb, third] = wordsOf(args, ARGO_VALUED);
  if (verb === undefined) return null;
  if (group === "app" || group === "appset") {
    if (verb === "delete" || verb === "delete-resource") {
      return args.values.some((v) => /^--cascade=false$/i.test(v)) ? CONTAINER : DESTROY;
    }
    if (verb === "sync") return args.long("prune") ? DESTROY : CONTAINER;
    if (verb === "actions") return third === "run" ? CONTAINER : null;
    return ARGO_APP.test(verb) ? CONTAINER : null;
  }
  if (group === "account")
    return /^(?:update-password|generate-token|delete-token)$/.test(verb) ? ACCESS : null;
  if (!/^(?:proj|cluster|repo|repocreds|cert|gpg)$/.test(group ?? "")) return null;
  const act = group === "proj" && (verb === "role" || verb === "windows") ? (third ?? "") : verb;
  return ARGO_CONFIG.test(act) ? INFRA : null;
}

/**
 * flux: reconciling, suspending, resuming and creating change what the controllers apply;
 * deleting a Flux object or uninstalling Flux deletes what it applied (pruning is on by default).
 * `--export` and a dry run only print.
 */
function flux({ args }: RuleInput): Hit | null {
  const verb = wordsOf(args, new Set(["-n", "--namespace", "--context", "--kubeconfig"]))[0];
  if (verb === undefined || args.long("export") || args.long("dry-run")) return null;
  if (verb === "delete" || verb === "uninstall") return DESTROY;
  return /^(?:reconcile|suspend|resume|create|bootstrap|install|push|tag|migrate)$/.test(verb)
    ? CONTAINER
    : null;
}

export const FORGE_RULES: ReadonlyMap<string, Rule> = table([
  [["gh", "glab"], judged(forge)],
  ["argocd", judged(argocd)],
  ["flux", judged(flux)],
]);
