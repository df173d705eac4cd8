import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Version control. Rewriting or discarding history is Tier 3 (history_destruction):
 * force pushes in every spelling, remote deletes, hard resets, cleaning untracked
 * files, deleting unmerged branches, discarding all uncommitted work. Ordinary
 * history changes (push, commit, merge, rebase, pull, tag) are Tier 2 (vcs_change):
 * the reflog or the remote can restore them.
 */

const GIT_VALUED = new Set([
  "-C",
  "-c",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--exec-path",
  "--config-env",
]);

const DESTROY = hit(3, "history_destruction");
const CHANGE = hit(2, "vcs_change");

/** git's parse-options takes bundled short flags (`-fu`) and unambiguous long abbreviations. */
function push(a: Args): Hit {
  if (a.clusters().some((c) => /[fd]/.test(c))) return DESTROY;
  const longs = a.longs();
  const forcing = ["force", "force-with-lease", "force-if-includes", "mirror", "delete", "prune"];
  if (longs.some((l) => l.length >= 3 && forcing.some((f) => f.startsWith(l) || l.startsWith(f))))
    return DESTROY;
  // `+main` forces that ref; `:main` (empty source) deletes it on the remote.
  if (a.operands().some((v) => /^\+./.test(v) || /^:[^:]/.test(v))) return DESTROY;
  return CHANGE;
}

function branch(a: Args): Hit | null {
  const clusters = a.clusters();
  const longs = a.longs();
  const deleting = clusters.some((c) => c.includes("d")) || longs.includes("delete");
  const forced = clusters.some((c) => c.includes("f")) || longs.includes("force");
  if (clusters.some((c) => c.includes("D")) || (deleting && forced)) return DESTROY;
  if (deleting || clusters.some((c) => /[mMcC]/.test(c)) || forced) return CHANGE;
  return null;
}

/** `git checkout -- .`, `git checkout -f`, `git restore .`: uncommitted work is gone for good. */
function discard(a: Args, sub: string): Hit | null {
  if (sub === "restore" && (a.short("S") || a.long("staged")) && !a.short("W") && !a.long("worktree"))
    return null;
  if (sub === "checkout" && (a.short("f") || a.long("force"))) return DESTROY;
  const paths = a.values.slice(a.optionEnd + 1);
  const broad = (p: string) => p === "." || p === "*" || p === ":/" || p === "/" || p === "./";
  if (paths.some(broad) || (sub === "restore" && a.operands().some(broad))) return DESTROY;
  if (sub === "checkout" && a.optionEnd === a.length && a.values.includes(".")) return DESTROY;
  if (paths.length > 0 || sub === "restore") return CHANGE;
  return null;
}

function git({ args }: RuleInput): Hit | null {
  const found = args.subcommand(GIT_VALUED);
  if (found === null) return null;
  const sub = found.value.toLowerCase();
  const a = args.from(found.index + 1);
  switch (sub) {
    case "push":
      return push(a);
    case "reset":
      if (a.long("hard", 2)) return DESTROY;
      return a.long("soft", 2) || a.long("mixed", 2) || a.long("keep", 2) || a.long("merge", 2)
        ? CHANGE
        : null;
    case "clean":
      if (a.short("n") || a.long("dry-run")) return null;
      return a.short("f") || a.long("force") ? DESTROY : null;
    case "branch":
      return branch(a);
    case "checkout":
    case "restore":
      return discard(a, sub);
    case "stash": {
      const verb = a.lower(0);
      if (verb === "clear") return DESTROY;
      return verb === "drop" || verb === "pop" ? CHANGE : null;
    }
    case "filter-branch":
    case "filter-repo":
      return DESTROY;
    case "reflog":
      return a.lower(0) === "expire" || a.lower(0) === "delete" ? DESTROY : null;
    case "gc":
      return a.longs().includes("prune") ? CHANGE : null;
    case "update-ref":
      // `-d` deletes the ref outright (no reflog entry to restore it from); `--stdin` may delete any.
      if (a.short("d") || a.long("stdin")) return DESTROY;
      return a.operands().length >= 2 ? CHANGE : null;
    case "tag":
      return a.length === 0 || a.short("l") || a.long("list") ? null : CHANGE;
    case "commit":
    case "merge":
    case "rebase":
    case "pull":
    case "cherry-pick":
    case "revert":
    case "am":
    case "apply":
    case "rm":
    case "mv":
    case "switch":
    case "worktree":
    case "submodule":
    case "lfs":
      return CHANGE;
    default:
      return null;
  }
}

function hg({ args }: RuleInput): Hit | null {
  const sub = args.subcommand()?.value.toLowerCase();
  if (sub === "strip" || sub === "purge") return DESTROY;
  if (sub === "push") return args.short("f") || args.long("force") ? DESTROY : CHANGE;
  if (sub === "update" || sub === "up") return args.short("C") || args.long("clean") ? DESTROY : null;
  return sub === "commit" || sub === "ci" || sub === "rebase" || sub === "histedit" ? CHANGE : null;
}

export const VCS_RULES = table([
  ["git", git],
  ["hg", hg],
]);
