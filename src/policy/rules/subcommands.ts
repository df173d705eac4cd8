import type { Basis } from "../types.js";
import { type Args, type Hit, hit } from "./args.js";

/**
 * The long tail of command-line tools: thousands of CLIs the rule tables do
 * not name (package managers, cloud and container front-ends, key stores,
 * media and note managers) share one grammar, `<tool> [group] <verb> …`.
 * Three generic rules read that grammar for any program:
 *
 * - a destructive verb in the subcommand position is at least Tier 2
 *   (`destructive_subcommand`); a table rule's higher verdict still wins;
 * - a request for help or the version prints text and changes nothing, so it
 *   cancels the verdict of its own command (but never of other parts of the
 *   line, nor of wrappers such as sudo, nor redirections);
 * - a read-only verb (`list`, `show`, `status` …) as the subcommand cancels a
 *   Tier-2 verdict that a table gave for the tool as a whole.
 *
 * See docs/adr/0018-long-tail-subcommands.md.
 */

/** A set from space-separated lists of words. */
function words(...lists: string[]): ReadonlySet<string> {
  return new Set(lists.flatMap((l) => l.split(" ")));
}

/** Verbs that delete, uninstall, stop or revoke whatever they are pointed at. */
const DESTRUCTIVE_VERBS: ReadonlySet<string> = words(
  "delete del remove rm rmi rmdir destroy uninstall autoremove purge prune wipe erase expunge nuke",
  "drop kill terminate reset revoke unregister deregister obliterate teardown undeploy unpublish",
  "deprovision",
);

/**
 * Long options that delete (`--delete`, `--remove-all`, `--purge`, `--deleteProperty`).
 * Options named after the gentler verbs are left out (`--kill-after`, `--reset-author`,
 * `--rm`, `--prune` as a filter), and so are the participles that select what to show
 * (`--deleted`, `--removed`).
 */
const DESTRUCTIVE_OPTION =
  /^--(?:delete|remove|purge|wipe|erase|destroy|uninstall|expunge|obliterate)(?:$|[-=A-Z])/;

/** A dry run only reports what the destructive verb would do. */
const DRY_RUN = /^--dry-?run(?:=|$)/i;

/**
 * Subcommands that act on the operand after them rather than naming a
 * group: after `git checkout` or `gh repo clone` the next word is a branch or
 * a name (`git checkout remove-stale-keys`), not a further subcommand.
 */
const OPERAND_VERBS: ReadonlySet<string> = words(
  "checkout switch merge rebase push pull fetch clone add commit tag log diff blame cherry-pick",
  "revert install set create new open edit update upgrade search find grep echo print say send",
  "message help man rename mv cp copy move",
);

/** Verbs that only report. `get` is left out of the lowering for the tools where it fetches (`go get`). */
const READ_ONLY_VERBS: ReadonlySet<string> = words("list ls show get status describe view info inspect");
const GET_FETCHES = new Set(["go", "ghq", "bzr", "brz"]);

/** Words that name a group of subcommands rather than an action (`conda env …`, `kubectl rollout …`). */
const GROUP_NOUNS: ReadonlySet<string> = words(
  "env environment environments pip tool tools worktree module modules profile profiles lfs group groups",
  "stash remote remotes config cache image images container containers volume volumes network networks",
  "node nodes pod pods service services plugin plugins repo repos secret secrets key keys package",
  "packages app apps project projects user users deployment deployments cluster clusters context contexts",
  "registry system buildx compose machine instance instances bucket buckets vm vms snapshot snapshots",
  "branch branches auth account accounts org orgs region regions zone zones policy policies role roles",
  "token tokens workspace workspaces stack stacks rollout extension extensions formula cask channel",
  "channels server servers subnet subnets port ports kv store storage disk disks device devices unit",
  "units job jobs task tasks queue queues topic topics model models dataset datasets",
);

/**
 * Subcommands that run another program with the rest of the line: after them a
 * `--help` may be the child's argument (`docker run image --help` starts the container).
 */
const RUNNER_VERBS = new Set(["run", "exec", "x", "dlx", "execute", "shell", "start", "call"]);

/** Programs that run their first operand, so nothing after it is theirs to interpret. */
const RUNNER_PROGRAMS: ReadonlySet<string> = words("npx bunx pnpx uvx yarn pnpm bun deno just make");

/**
 * Programs whose first operands are data — text to print or search, files,
 * names, other commands — so a verb there is a value: `grep delete log`,
 * `echo remove`, `man kill`, `touch reset`. The deletion programs themselves
 * (`rm`, `unlink`, `shred` …) have their own rules.
 */
const DATA_OPERANDS: ReadonlySet<string> = words(
  // printing and searching text
  "echo printf print grep egrep fgrep zgrep rg ag ack pgrep pidof look sed awk gawk mawk jq yq tr",
  "cut sort uniq head tail cat tac less more bat wc nl fold fmt rev yes banner figlet toilet cowsay",
  "say espeak spd-say logger wall write notify-send zenity whiptail dialog gum",
  // documentation and name lookup
  "man info tldr tlrc cheat help whatis apropos which whereis type hash alias unalias compgen",
  "complete",
  // shell builtins with operands
  "test [ [[ expr let export set unset declare typeset local readonly read shift trap cd pushd popd",
  "builtin getopts",
  // files named by operands
  "rm unlink shred srm ls tree stat file touch mkdir cp mv ln install basename dirname realpath",
  "readlink locate plocate mlocate fd fdfind find du df diff cmp comm md5sum sha1sum sha256sum xxd",
  "hexdump od strings vi vim nvim nano emacs code open xdg-open",
  // names of processes, users, hosts
  "kill pkill killall id groups finger ping host dig nslookup whois sleep seq timeout",
);

/** Verdicts a subcommand form may lower: the Tier-2 families a table gives for a whole tool. */
const SUBCOMMAND_FAMILIES: ReadonlySet<Basis> = new Set<Basis>([
  "package_change",
  "container_change",
  "infrastructure_change",
  "service_change",
  "vcs_change",
  "schedule_change",
  "host_change",
  "firewall_change",
  "destructive_subcommand",
]);

const HELP_FLAGS = new Set(["--help", "--version", "--usage", "-help", "-version"]);
/** `-?` is left out: unquoted it is a glob, and a file named `-d` would turn it into an option. */
const HELP_SHORT = new Set(["-h"]);
/** For these `-h` means halt, not help. */
const H_IS_HALT = /^(?:shutdown|halt|reboot|poweroff|telinit|init)$/;

/** How many leading non-option words count as the subcommand path. */
const PATH_DEPTH = 3;

/** A word shaped like a subcommand: lower-case letters and digits, joined by `-`, `_` or `:`. */
const SUBCOMMAND_SHAPE = /^[a-z][a-z0-9]*(?:[-_:][a-z0-9]+)*$/;

/** A word's segments (`kill-server` → kill, server); most words have one, so skip the split then. */
function segmentsOf(word: string): string[] {
  return word.includes("-") || word.includes("_") || word.includes(":") ? word.split(/[-_:]/) : [word];
}

const verbIn = (segments: readonly string[], verbs: ReadonlySet<string>): boolean =>
  segments.some((s) => verbs.has(s));

/**
 * The subcommand path: the first non-option words after the program, at most
 * PATH_DEPTH, up to `--` or the first word that is not shaped like a
 * subcommand. A word right after an option is taken as that option's value
 * (`git commit -m delete`, `kubectl -n prod delete`), so it is skipped and
 * not counted.
 */
export function subcommandPath(args: Args): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.optionEnd && out.length < PATH_DEPTH; i++) {
    const v = args.values[i]!;
    if (args.words[i]!.dynamic) return out;
    if (v.startsWith("-") && v.length > 1) continue;
    const prev = args.values[i - 1];
    if (prev?.startsWith("-") && prev.length > 1 && !prev.includes("=")) continue;
    const word = v.toLowerCase();
    if (!SUBCOMMAND_SHAPE.test(word)) return out;
    out.push(word);
    if (OPERAND_VERBS.has(word)) return out;
  }
  return out;
}

/** `delete`, `kill-server`, `apps:destroy` … in the subcommand path of a program that has subcommands. */
function destructiveSubcommand(name: string, args: Args, path = subcommandPath(args)): Hit | null {
  if (DATA_OPERANDS.has(name)) return null;
  let deleting = false;
  for (let i = 0; i < args.optionEnd; i++) {
    const v = args.values[i]!;
    if (!v.startsWith("--")) continue;
    if (DRY_RUN.test(v)) return null;
    deleting ||= DESTRUCTIVE_OPTION.test(v);
  }
  for (const word of path) {
    const segments = segmentsOf(word);
    if (verbIn(segments, DESTRUCTIVE_VERBS)) return hit(2, "destructive_subcommand");
    if (verbIn(segments, RUNNER_VERBS) || verbIn(segments, READ_ONLY_VERBS)) return null;
  }
  return deleting ? hit(2, "destructive_subcommand") : null;
}

/**
 * How far a help or version request goes: `whole` when the program is given
 * nothing but the request (`passwd --help`: every program prints help or
 * rejects the option), `subcommand` when it follows a plain subcommand path
 * (`kubectl delete --help`, `git help reset`, `aws s3 rm help`), which only
 * cancels the Tier-2 families a subcommand decides. Anything else in the
 * argv — an option, a path, an operand of a runner — keeps the verdict.
 */
export function helpRequest(name: string, args: Args): "whole" | "subcommand" | null {
  const v = args.values;
  const last = v[v.length - 1];
  if (last === undefined) return null;
  const isFlag = HELP_FLAGS.has(last) || (HELP_SHORT.has(last) && !H_IS_HALT.test(name));
  if (!isFlag && last !== "help" && v[0] !== "help") return null;
  if (args.anyDynamic() || args.optionEnd < v.length) return null;
  if (v.length === 1) return isFlag ? "whole" : "subcommand";
  const before = (v[0] === "help" ? v.slice(1) : v.slice(0, -1)).map((w) => w.toLowerCase());
  if (before.length > PATH_DEPTH || !before.every((w) => SUBCOMMAND_SHAPE.test(w))) return null;
  if (RUNNER_PROGRAMS.has(name)) return null;
  // `docker container run image --help`: after a runner verb, the words are the child's.
  if (before.slice(0, -1).some((w) => verbIn(segmentsOf(w), RUNNER_VERBS))) return null;
  return "subcommand";
}

/**
 * A read-only verb leads the subcommand path, after nothing but group nouns
 * (`launchctl list`, `conda env list`, `uv pip show x`). The nouns are listed
 * because a verb before the read-only word makes it an operand:
 * `terraform apply show` applies a plan file named `show`.
 */
function readOnlySubcommand(name: string, path: readonly string[]): boolean {
  for (const word of path) {
    const segments = segmentsOf(word);
    if (READ_ONLY_VERBS.has(word) || segments[0] === "ls" || segments[0] === "list") {
      return !(word === "get" && GET_FETCHES.has(name));
    }
    if (!GROUP_NOUNS.has(word)) return false;
  }
  return false;
}

/**
 * Combine a table rule's verdict for one command (`null` when none) with the
 * generic subcommand rules; returns the verdict to record.
 */
export function subcommandVerdict(name: string, args: Args, table: Hit | null): Hit | null {
  if (args.length === 0) return table;
  const help = helpRequest(name, args);
  if (help === "whole") return null;
  const lowerable = table === null || (table.tier <= 2 && SUBCOMMAND_FAMILIES.has(table.basis));
  if (help === "subcommand" && lowerable) return null;
  const path = subcommandPath(args);
  if (lowerable && table !== null && readOnlySubcommand(name, path)) return null;
  const generic = destructiveSubcommand(name, args, path);
  if (generic === null) return table;
  return table !== null && table.tier >= generic.tier ? table : generic;
}
