import type { Basis } from "../types.js";
import { type Args, type Hit, hit } from "./args.js";
import { isDryRun } from "./dry-run.js";
import { hasTableRule } from "./index.js";

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

/**
 * Verbs that destroy what they name: the object and its data are gone, and no
 * `install` or `create` brings the same data back (`gh repo delete`,
 * `heroku apps:destroy`, `consul kv delete`).
 */
const DESTROYING_VERBS: ReadonlySet<string> = words(
  "delete del rm rmi destroy purge prune wipe erase expunge nuke drop terminate obliterate teardown",
);

/**
 * Verbs that take something away that can be put back: a package reinstalled,
 * a process restarted, a registration or grant made again (`brew uninstall`,
 * `tmux kill-server`, `vault token revoke`).
 */
const UNDOING_VERBS: ReadonlySet<string> = words(
  "remove rmdir uninstall autoremove kill reset revoke unregister deregister undeploy unpublish",
  "deprovision",
);

/** Verbs that delete, uninstall, stop or revoke whatever they are pointed at. */
const DESTRUCTIVE_VERBS: ReadonlySet<string> = new Set([...DESTROYING_VERBS, ...UNDOING_VERBS]);

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
const READ_ONLY_VERBS: ReadonlySet<string> = words(
  "list ls show get status describe view info inspect can-i whoami",
);
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
  "nodegroup nodegroups namespace namespaces release releases",
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
  // URLs and request items (http.ts reads their methods)
  "curl wget wget2 http https xh xhs",
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

/**
 * Windows' own tools (`vssadmin delete shadows`, `sc delete`, `reg delete`): the Windows rules
 * (patterns/windows.ts) judge them on SSH targets with their own basis; here they keep the Tier-2 verdict.
 */
const WINDOWS_NATIVE: ReadonlySet<string> = words(
  "vssadmin reg sc wmic bcdedit wbadmin schtasks netsh net diskpart cipher dism wevtutil bitsadmin",
);

const DESTROYING = hit(3, "destructive_subcommand");
const UNDOING = hit(2, "destructive_subcommand");

/**
 * `delete`, `kill-server`, `apps:destroy` … in the subcommand path of a program that has subcommands.
 * A verb that destroys what it names is Tier 3 for a program no table knows (`strong`); the gentler
 * verbs, and every verb of a program a table has judged, are Tier 2. A deleting long option alone
 * (`--delete`) names no object, so it stays Tier 2.
 */
function destructiveSubcommand(
  name: string,
  args: Args,
  path: readonly string[],
  strong: boolean,
): Hit | null {
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
    if (verbIn(segments, DESTRUCTIVE_VERBS)) {
      return strong && verbIn(segments, DESTROYING_VERBS) ? DESTROYING : UNDOING;
    }
    if (verbIn(segments, RUNNER_VERBS) || verbIn(segments, READ_ONLY_VERBS) || READ_ONLY_VERBS.has(word))
      return null;
  }
  return deleting ? UNDOING : null;
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
 * Verbs that end a subcommand path and take their object after them; besides
 * DESTRUCTIVE_VERBS, the storage and history verbs the tables know.
 */
const OBJECT_VERBS: ReadonlySet<string> = words(
  "labelclear rollback zap format luksformat lukserase clean flush sanitize zero-superblock",
);

/**
 * A help request right after a destructive verb, with no object named
 * (`terraform destroy --help`, `docker system prune --help`, `zfs destroy -h`,
 * `git help push`): the verb has nothing to act on, and every program with
 * subcommands prints the verb's help. A Tier-3 verdict is cancelled too;
 * with an object after the verb (`kubectl delete namespace prod --help`) it
 * stays, as do the power programs and the file tools (BSD `rm x --help`
 * deletes x).
 */
function verbHelp(name: string, args: Args): boolean {
  if (DATA_OPERANDS.has(name) || H_IS_HALT.test(name)) return false;
  const v = args.values;
  const before = (v[0] === "help" ? v.slice(1) : v.slice(0, -1)).map((w) => w.toLowerCase());
  // `eksctl delete cluster --help`: a kind of object after the verb still names none.
  let end = before.length;
  while (end > 1 && GROUP_NOUNS.has(before[end - 1]!)) end--;
  const last = before[end - 1];
  if (last === undefined) return false;
  return verbIn(segmentsOf(last), DESTRUCTIVE_VERBS) || OBJECT_VERBS.has(last);
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
  // A documented dry run reports the act and does not do it (dry-run.ts lists the trusted flags).
  if (isDryRun(name, args)) return null;
  const help = helpRequest(name, args);
  if (help === "whole") return null;
  const lowerable = table === null || (table.tier <= 2 && SUBCOMMAND_FAMILIES.has(table.basis));
  if (help === "subcommand" && (lowerable || verbHelp(name, args))) return null;
  const path = subcommandPath(args);
  if (lowerable && table !== null && readOnlySubcommand(name, path)) return null;
  const strong = table === null && !hasTableRule(name) && !WINDOWS_NATIVE.has(name.replace(/\.exe$/, ""));
  const generic = destructiveSubcommand(name, args, path, strong);
  if (generic === null) return table;
  return table !== null && table.tier >= generic.tier ? table : generic;
}
