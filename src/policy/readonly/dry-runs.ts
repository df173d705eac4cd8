import { Args } from "../rules/args.js";
import { isDryRun } from "../rules/dry-run.js";
import type { Word } from "../shell/words.js";

/**
 * Dry runs that are proofs (ADR 0044). Every documented dry-run form lowers a
 * command to Tier 1 (`rules/dry-run.ts`); these few are proven reads as well,
 * because their program promises to write nothing in that mode and runs no
 * code beyond what a read of the same program runs: package managers that
 * only resolve, LVM and ZFS test modes, git's `-n`, rsync's trial run,
 * Kubernetes' client and server dry runs, Helm's, `terraform plan`, EC2's
 * permission check, firewall rule checks and `mke2fs -n`. Each is an
 * allow-list of the options that may stand beside the dry-run flag: an option
 * not listed (a log file, another configuration, a program to run, a hook
 * that fires) leaves the command unproven. Dry runs that run project code or
 * hooks (`make -n`, `pip`/`npm`/`cargo --dry-run`, `ansible --check`,
 * `puppet --noop`, `certbot --dry-run`, `pulumi preview`) are not here.
 */

interface PureDryRun {
  /** Every option word allowed (matched whole). */
  options: RegExp;
  /** Options whose value is the next word. */
  valued?: readonly string[];
  /** What the first operand (the subcommand) must be, when the program has them. */
  verbs?: RegExp;
  /** Options that must not appear, for programs with too many options to list (Kubernetes, Helm). */
  denied?: RegExp;
}

const APT: PureDryRun = {
  options:
    /^(?:-[syqVfmu]+|--(?:simulate|just-print|dry-run|recon|no-act|yes|assume-yes|quiet|no-install-recommends|install-recommends|no-install-suggests|fix-broken|reinstall|only-upgrade|allow-downgrades|purge|auto-remove|autoremove|show-upgraded|verbose-versions|no-upgrade|ignore-missing|fix-missing|with-new-pkgs)|-t|--target-release|--default-release|--(?:target|default)-release=\S+)$/,
  valued: ["-t", "--target-release", "--default-release"],
  verbs:
    /^(?:install|remove|purge|upgrade|dist-upgrade|full-upgrade|autoremove|auto-remove|reinstall|build-dep|satisfy)$/,
};

const DNF: PureDryRun = {
  // --assumeno answers the transaction's question; -y beside it would answer it the other way.
  options:
    /^(?:--assumeno|-[qvC]+|--quiet|--verbose|--cacheonly|--best|--nobest|--allowerasing|--refresh|--(?:enable|disable)repo=\S+)$/,
  verbs: /^(?:install|remove|erase|upgrade|update|downgrade|reinstall|autoremove|distro-sync)$/,
};

const LVM: PureDryRun = {
  // Not -r/--resizefs: the file system tool it runs is not under LVM's test mode.
  options:
    /^(?:-[tfyvqA]+|--test|--force|--yes|--verbose|--quiet|-[Lln]|--size|--extents|--name|--(?:size|extents|name|autobackup)=\S+)$/,
  valued: ["-L", "-l", "-n", "--size", "--extents", "--name"],
};

const KUBE: PureDryRun = {
  options: /^-/,
  denied:
    /^(?:-s|--server|--kubeconfig|--token|--as|--as-group|--as-uid|--certificate-authority|--client-key|--client-certificate|--username|--password|--cache-dir|--raw|--edit|--exec|--enable-exec|--enable-alpha-plugins|--enable-helm|--helm-command|-i|--stdin|-t|--tty|--attach)(?:=|$)/,
  verbs:
    /^(?:apply|create|delete|replace|patch|scale|drain|cordon|uncordon|taint|label|annotate|expose|run|set|autoscale|rollout)$/,
};

const NFT_CHECK: PureDryRun = {
  options:
    /^(?:-c|--check|-f|--file|-cf|-n|--numeric|-s|--stateless|-a|--handle|-e|--echo|-j|--json|-t|--terse)$/,
  valued: ["-f", "--file", "-cf"],
};

const RESTORE_TEST: PureDryRun = {
  options: /^(?:-[tnvcw]+|--test|--noflush|--verbose|--counters|--wait(?:=\d+)?|-T|--table(?:=\S+)?)$/,
  valued: ["-T", "--table"],
};

const PURE = new Map<string, PureDryRun>([
  ["apt-get", APT],
  ["apt", APT],
  [
    "dpkg",
    {
      options:
        /^(?:--dry-run|--no-act|--simulate|-[irP]|--install|--remove|--purge|--configure|-a|--pending|-R|--recursive|--force-[\w,-]+)$/,
    },
  ],
  [
    "rpm",
    {
      options:
        /^(?:--test|-[ivhUFe]+|--erase|--install|--upgrade|--freshen|--nodeps|--allmatches|--replacepkgs|--replacefiles|--oldpackage|--force|--nosignature|--nodigest|--excludedocs|--quiet|--verbose|--hash)$/,
    },
  ],
  ["dnf", DNF],
  ["yum", DNF],
  ["zfs", { options: /^-[nvrRpfd]+$/, verbs: /^destroy$/ }],
  [
    "zpool",
    {
      options: /^(?:-[nfgLPsw]+|-o|-O|-m|-R|-t)$/,
      valued: ["-o", "-O", "-m", "-R", "-t"],
      verbs: /^(?:create|add|remove|split)$/,
    },
  ],
  ...["lvremove", "vgremove", "pvremove", "lvreduce", "lvextend", "lvresize", "lvcreate", "vgreduce"].map(
    (n): [string, PureDryRun] => [n, LVM],
  ),
  [
    "rsync",
    {
      // Not -e/--rsh or --rsync-path (programs), nor a log, batch, temporary or backup place.
      options:
        /^(?:-[avznrlptgoDHAXxucihPSWRqmOJUNkKLdE]+|--(?:dry-run|delete(?:-before|-during|-delay|-after|-excluded)?|del|itemize-changes|archive|verbose|compress|human-readable|stats|progress|checksum|list-only|size-only|ignore-existing|ignore-times|update|existing|remove-source-files|numeric-ids|partial|inplace|hard-links|acls|xattrs|sparse|one-file-system|relative|prune-empty-dirs|copy-links|safe-links|links|perms|times|owner|group|devices|specials|force|ignore-errors|delay-updates|omit-dir-times|from0|recursive|append|append-verify|whole-file|no-[\w-]+)|--(?:exclude|include|exclude-from|include-from|files-from|filter|info|debug|max-size|min-size|max-delete|bwlimit|timeout|contimeout|out-format|chmod|chown|usermap|groupmap|modify-window|compress-level)(?:=\S+)?)$/,
      valued: ["--exclude", "--include", "--exclude-from", "--include-from", "--files-from", "--filter"],
    },
  ],
  ["kubectl", KUBE],
  ["oc", KUBE],
  [
    "helm",
    {
      options: /^-/,
      denied:
        /^(?:--post-renderer|--post-renderer-args|--dependency-update|--kubeconfig|--kube-token|--kube-apiserver|--kube-as-user|--kube-as-group|--kube-ca-file|--kube-insecure-skip-tls-verify|--repository-config|--registry-config|--take-ownership|--plugins)(?:=|$)/,
      verbs: /^(?:install|upgrade|uninstall|rollback)$/,
    },
  ],
  ["nft", NFT_CHECK],
  ["iptables-restore", RESTORE_TEST],
  ["ip6tables-restore", RESTORE_TEST],
]);

/** git's dry runs, per subcommand: `-n` means it there, and nothing beside it runs a hook or another program. */
const GIT_DRY: Readonly<Record<string, RegExp>> = {
  clean: /^(?:-[ndxXqf]+|--dry-run|--quiet|--force|--exclude=\S+)$/,
  push: /^(?:-[nfvqd]+|--dry-run|--force|--force-with-lease(?:=\S+)?|--force-if-includes|--all|--branches|--tags|--delete|--mirror|--porcelain|--verbose|--quiet|--no-verify|--follow-tags|--prune|--atomic)$/,
  add: /^(?:-[nAuvfN]+|--dry-run|--all|--update|--verbose|--force|--ignore-missing|--intent-to-add)$/,
  rm: /^(?:-[nrfq]+|--dry-run|--cached|--quiet|--force)$/,
  mv: /^(?:-[nvfk]+|--dry-run|--verbose|--force)$/,
};

/** `terraform plan` reads state and providers as `terraform show` does; `-out` writes a plan file. */
const TERRAFORM_PLAN =
  /^--?(?:var-file=\S+|var=\S+|var|target=\S+|replace=\S+|destroy|refresh-only|refresh=(?:true|false)|lock=(?:true|false)|lock-timeout=\S+|input=(?:true|false)|no-color|compact-warnings|detailed-exitcode|parallelism=\d+|json)$/;

/** Every word literal, every option allowed (its value skipped), the first operand an allowed verb. */
function allowed(form: PureDryRun, args: readonly Word[]): boolean {
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    if (w.dynamic || w.glob) return false;
    const v = w.value;
    if (v === "--") return true;
    if (v.startsWith("-") && v.length > 1) {
      if (!form.options.test(v) || form.denied?.test(v) === true) return false;
      if (form.valued?.includes(v)) i++;
    } else if (operands++ === 0 && form.verbs !== undefined && !form.verbs.test(v)) return false;
  }
  return form.verbs === undefined || operands > 0;
}

function terraformPlan(args: readonly Word[]): boolean {
  const rest = args[0]?.value.startsWith("-chdir=") === true ? args.slice(1) : args;
  if (rest[0]?.value !== "plan") return false;
  return rest.slice(1).every((w, i, all) => {
    if (w.dynamic || w.glob) return false;
    // `-var 'k=v'`: the value of a -var is the next word.
    if (/^--?var$/.test(all[i - 1]?.value ?? "")) return true;
    return TERRAFORM_PLAN.test(w.value);
  });
}

/** EC2's DryRun asks the API whether the call would be allowed and changes nothing; `aws s3 … --dryrun` lists. */
function awsDryRun(args: readonly Word[]): boolean {
  if (args.some((w) => w.dynamic || w.glob || /^--(?:cli-input-json|cli-input-yaml)(?:=|$)/.test(w.value)))
    return false;
  const operands = args.filter((w) => !w.value.startsWith("-")).map((w) => w.value);
  const dry = args.some((w) => w.value === "--dry-run" || w.value === "--dryrun");
  if (!dry) return false;
  if (operands[0] === "ec2") return args.some((w) => w.value === "--dry-run");
  return (
    operands[0] === "s3" &&
    /^(?:cp|sync|mv|rm)$/.test(operands[1] ?? "") &&
    args.some((w) => w.value === "--dryrun")
  );
}

/** `logrotate -d` "makes no changes to the logs and does not update the state file", and runs no script. */
function logrotateDebug(args: readonly Word[]): boolean {
  const literal = args.every((w) => !w.dynamic && !w.glob);
  const options = args.filter((w) => w.value.startsWith("-")).map((w) => w.value);
  return (
    literal &&
    options.some((o) => o === "-d" || o === "--debug") &&
    options.every((o) => /^(?:-[dvf]+|--debug|--verbose|--force)$/.test(o))
  );
}

/** `pfctl -nf FILE`: parse the rules and load nothing (only verbosity beside it). */
function pfctlParseOnly(args: readonly Word[]): boolean {
  if (args.some((w) => w.dynamic || w.glob)) return false;
  const letters = args
    .map((w) => w.value)
    .filter((v, i, all) => v.startsWith("-") && !/^-[a-z]*f$/.test(all[i - 1] ?? ""));
  return (
    letters.every((v) => /^-[nvqf]+$/.test(v)) &&
    letters.some((v) => v.includes("n")) &&
    letters.some((v) => v.endsWith("f"))
  );
}

/** Whether this argv is a dry run that is also a proof (the program's lower-cased base name). */
export function provenDryRun(name: string, args: readonly Word[]): boolean {
  if (name === "logrotate") return logrotateDebug(args);
  if (name === "pfctl") return pfctlParseOnly(args);
  if (name === "terraform" || name === "tofu") return terraformPlan(args);
  if (name === "aws") return awsDryRun(args);
  // Every command passes here: only the programs below are worth parsing the arguments for.
  const ext = /^(?:mke2fs|mkfs\.ext[234])$/.test(name);
  if (!(PURE.has(name) || name === "git" || ext)) return false;
  if (!isDryRun(name, new Args(args))) return false;
  if (name === "git") {
    const sub = args[0]?.value ?? "";
    const options = Object.hasOwn(GIT_DRY, sub) ? GIT_DRY[sub] : undefined;
    return options !== undefined && allowed({ options }, args.slice(1));
  }
  if (ext) return mke2fsAllowed(args);
  const form = PURE.get(name);
  return form !== undefined && allowed(form, args);
}

/** `mke2fs -n` shows what it would make and writes nothing; not -c, whose bad-block test may write. */
function mke2fsAllowed(args: readonly Word[]): boolean {
  return allowed(
    {
      options: /^(?:-[nqvFSjKD]+|-[bCdEgGiIJLlMmNoOrtTUe])$/,
      valued: "-b -C -d -E -g -G -i -I -J -L -l -M -m -N -o -O -r -t -T -U -e".split(" "),
    },
    args,
  );
}
