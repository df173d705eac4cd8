import { type Args, type Hit, hit, type Rule, type RuleInput, table } from "./args.js";
import { writesPaths } from "./files.js";
import { ARCHIVE_RULES, OBJECT_STORE_RULES, operandsOf } from "./objects.js";
import { isDatabasePath } from "./targets.js";

/**
 * Backup tools and database backups by kind. Taking a backup, creating or changing a repository,
 * a schedule or a retention setting is Tier 2 (data_store_change). Deleting backups (restic
 * forget and prune, borg delete, prune, compact and recreate, expiring or removing them in
 * pgBackRest, barman, WAL-G, kopia and duplicity) is Tier 3 (data_store_destruction), and so is
 * breaking a repository's locks out from under the commands that hold them. A restore is judged
 * by where it writes, as any file write is (files.ts), except that over a database's data
 * directory it replaces the database (Tier 3): pgbackrest restore, barman recover and wal-g
 * backup-fetch write one unless they name another directory, and velero's
 * `--existing-resource-policy update` overwrites live objects. Keys and users that open a
 * repository are account access: added or changed, Tier 2; removed, Tier 3. The listings are
 * proven in readonly/programs-backup.ts; the dry runs these tools document are in dry-run.ts.
 */

const BACKUP = hit(2, "data_store_change");
const LOSS = hit(3, "data_store_destruction");
const KEY = hit(2, "account_access");
const KEY_LOSS = hit(3, "account_access");
const MOUNT = hit(2, "filesystem_change");

const set = (list: string): ReadonlySet<string> => new Set(list.split(" "));
const verbsOf = (args: Args, valued: ReadonlySet<string>): string[] =>
  operandsOf(args, valued).map((v) => v.toLowerCase());

/**
 * A restore into `target`: over a database's data directory it replaces the database (Tier 3);
 * elsewhere it is a file write, judged by where it writes. `unknown` is the verdict when the
 * command names no directory (pgBackRest restores into the configured data directory).
 */
function restoreInto(target: string | undefined, unknown: Hit | null = null): Hit | null {
  if (target === undefined) return unknown;
  return isDatabasePath(target) ? LOSS : writesPaths([target]);
}

const RESTIC_VALUED = set(
  "-r --repo --repository-file -p --password-file --key-hint --cacert --tls-client-cert --cache-dir -o --option",
);
const RESTIC_WRITES = set("backup copy tag init migrate recover rebuild-index");

/** restic: `restore --delete` removes what the snapshot lacks from the target. */
function restic({ args }: RuleInput): Hit | null {
  const [sub, second] = verbsOf(args, RESTIC_VALUED);
  if (sub === "forget" || sub === "prune") return LOSS;
  if (sub === "key")
    return second === "remove" ? KEY_LOSS : second === "add" || second === "passwd" ? KEY : null;
  if (sub === "unlock") return args.long("remove-all") ? LOSS : null;
  if (sub === "rewrite" || sub === "repair") return args.long("forget") ? LOSS : BACKUP;
  if (sub === "mount") return MOUNT;
  if (sub === "self-update") return hit(2, "package_change");
  if (sub === "restore") {
    if (args.long("delete")) return hit(3, "file_destruction");
    return restoreInto(args.optionValue("-t", "--target"));
  }
  return sub !== undefined && RESTIC_WRITES.has(sub) ? BACKUP : null;
}

const BORG_VALUED = set("--lock-wait --umask --rsh --remote-path -r --repo --upload-ratelimit --debug-topic");
const BORG_LOSS = set("delete prune compact recreate break-lock rdelete repo-delete");
const BORG_WRITES = set(
  "create init rcreate repo-create rename import-tar upgrade transfer tag undelete repo-compress benchmark",
);

/**
 * borg: compact frees the space of deleted archives, after which they cannot be brought back;
 * recreate rewrites archives and drops what its patterns exclude; break-lock removes the locks of
 * commands still running. `with-lock` runs the command after it, which no rule reads here.
 */
function borg({ args }: RuleInput): Hit | null {
  const [sub, second] = verbsOf(args, BORG_VALUED);
  if (sub === undefined) return null;
  if (BORG_LOSS.has(sub)) return LOSS;
  if (BORG_WRITES.has(sub)) return BACKUP;
  if (sub === "change-passphrase" || sub === "migrate-to-repokey") return KEY;
  if (sub === "key") return second === undefined || second === "export" ? null : KEY;
  if (sub === "config")
    return args.long("delete") || args.short("d") || args.operands().length >= 4 ? BACKUP : null;
  if (sub === "debug") return second === "delete-obj" ? LOSS : second === "put-obj" ? BACKUP : null;
  if (sub === "with-lock") return hit(2, "opaque_program");
  return sub === "mount" ? MOUNT : null;
}

const KOPIA_VALUED = set("-p --password --config-file --log-level --file-log-level");

/**
 * kopia: snapshot delete and expire delete only with --delete, but they run in a write session
 * that may start automatic maintenance, so without it they stay Tier 2; full maintenance deletes
 * the blobs nothing references any more.
 */
function kopia({ args }: RuleInput): Hit | null {
  const ops = verbsOf(args, KOPIA_VALUED);
  const [a, b] = ops;
  const confirmed = args.long("delete") ? LOSS : BACKUP;
  if (a === "snapshot" || a === "snap") {
    if (b === "delete" || b === "rm" || b === "expire") return confirmed;
    if (b === "fix") return args.long("commit") ? LOSS : BACKUP;
    if (b === "restore") return restoreInto(operandsOf(args, KOPIA_VALUED)[3]);
    return b === "create" || b === "migrate" || b === "pin" || b === "copy-history" || b === "move-history"
      ? BACKUP
      : null;
  }
  if (a === "restore") return restoreInto(operandsOf(args, KOPIA_VALUED)[2]);
  if (a === "maintenance")
    return b === "run" ? (args.long("full") ? LOSS : BACKUP) : b === "set" ? BACKUP : null;
  if (a === "repository" || a === "repo") {
    if (b === "change-password") return KEY;
    if (b === "sync-to") return confirmed;
    return set("create set-parameters upgrade validate-provider throttle").has(b ?? "") && ops[2] !== "get"
      ? BACKUP
      : null;
  }
  if ((a === "content" || a === "blob" || a === "manifest") && set("delete rm remove").has(b ?? ""))
    return LOSS;
  if (a === "blob" && b === "gc") return args.optionValue("--delete") === undefined ? null : LOSS;
  if (a === "policy") return set("set edit import delete rm remove").has(b ?? "") ? BACKUP : null;
  if (a === "content" || a === "index")
    return b === "rewrite" || b === "optimize" || b === "recover" ? BACKUP : null;
  if ((a === "user" || a === "acl") && set("delete rm remove").has(b ?? "")) return KEY_LOSS;
  if (a === "user" || a === "acl") return b === "add" || b === "set" || b === "enable" ? KEY : null;
  return a === "mount" ? MOUNT : null;
}

/** rsnapshot: an interval or `sync` takes a snapshot and removes the oldest beyond its retain count; -t only prints. */
function rsnapshot({ args }: RuleInput): Hit | null {
  if (args.short("t")) return null;
  const op = verbsOf(args, set("-c"))[0];
  const reads = set("configtest du diff get-latest-snapshot version help");
  return op === undefined || reads.has(op) ? null : BACKUP;
}

const DUPLICITY_COMMANDS = set(
  "full incremental incr backup restore verify collection-status list-current-files cleanup " +
    "remove-older-than remove-all-but-n-full remove-all-inc-of-but-n-full",
);

/**
 * duplicity: the remove commands and cleanup list what they would delete unless --force is given
 * (dry-run.ts); without a command, a local source and a URL target back up, a URL source restores.
 */
function duplicity({ args }: RuleInput): Hit | null {
  const ops = args.operands();
  const command = ops.find((o) => DUPLICITY_COMMANDS.has(o));
  if (command?.startsWith("remove-")) return LOSS;
  if (command === "cleanup") return BACKUP;
  if (command === "restore") return restoreInto(ops[ops.length - 1]);
  if (command !== undefined) return /^(?:full|incr|incremental|backup)$/.test(command) ? BACKUP : null;
  const [source, target] = ops.slice(-2);
  if (source === undefined || target === undefined) return null;
  if (source.includes("://")) return restoreInto(target);
  return target.includes("://") ? BACKUP : null;
}

const VELERO_VALUED = set("-n --namespace --kubeconfig --kubecontext -o --output -l --selector --features");

/**
 * velero: `create` and `delete` come in both orders (`velero backup create`, `velero create
 * backup`); a create with -o prints the object and sends nothing. Deleting any velero resource is
 * deleting a cluster resource, as `kubectl delete` of it would be; deleting a backup also deletes
 * its data in object storage. A restore writes objects into the cluster, and with
 * `--existing-resource-policy update` overwrites the live ones.
 */
function velero({ args }: RuleInput): Hit | null {
  const [a, b] = verbsOf(args, VELERO_VALUED);
  if (a === "install") return hit(2, "container_change");
  if (a === "uninstall") return hit(3, "infrastructure_destruction");
  if (a === "plugin") return b === "add" || b === "remove" ? hit(2, "container_change") : null;
  const [kind, verb] = a === "create" || a === "delete" ? [b, a] : [a, b];
  const what = kind?.replace(/s$/, "");
  if (verb === "delete") return what === "backup" ? LOSS : hit(3, "infrastructure_destruction");
  if (verb === "create" && args.optionValue("-o", "--output") !== undefined) return null;
  if (what === "schedule")
    return set("create pause unpause").has(verb ?? "") ? hit(2, "schedule_change") : null;
  if (verb !== "create" && verb !== "set") return null;
  if (what === "backup") return BACKUP;
  if (what === "restore")
    return /^update$/i.test(args.optionValue("--existing-resource-policy") ?? "")
      ? LOSS
      : hit(2, "container_change");
  return what === "backup-location" || what === "snapshot-location" ? hit(2, "container_change") : null;
}

const PGBACKREST = new Map<string, Hit>([
  ..."backup archive-push stanza-create stanza-upgrade annotate"
    .split(" ")
    .map((c): [string, Hit] => [c, BACKUP]),
  ..."expire stanza-delete repo-rm restore".split(" ").map((c): [string, Hit] => [c, LOSS]),
  ["stop", hit(2, "service_change")],
  ["start", hit(2, "service_change")],
]);

/** pgBackRest: restore writes the configured data directory; stop halts archiving and backups until start. */
function pgbackrest({ args }: RuleInput): Hit | null {
  const command = args.operands().find((o) => PGBACKREST.has(o));
  if (command === undefined || (command === "expire" && args.long("dry-run"))) return null;
  if (command === "restore") return restoreInto(args.optionValue("--pg1-path", "--pg-path"), LOSS);
  return PGBACKREST.get(command)!;
}

const BARMAN_WRITES = set(
  "backup cron switch-wal switch-xlog archive-wal put-wal receive-wal sync-backup sync-wals rebuild-xlogdb",
);

/** Barman: `keep` with only --status reads; recover (restore) overwrites the destination data directory. */
function barman({ args }: RuleInput): Hit | null {
  const op = verbsOf(args, set("-c --config -f --format --log-level"))[0];
  if (op === undefined) return null;
  if (op === "delete") return LOSS;
  // The destination is the last absolute path: the recovery options' values (times, names) are not.
  if (op === "recover" || op === "restore")
    return restoreInto(
      args.operands().findLast((o) => o.startsWith("/")),
      LOSS,
    );
  if (op === "keep") return args.long("status") ? null : BACKUP;
  if (op === "config-switch" || op === "config-update") return hit(2, "config_change");
  if (op === "terminate-process") return hit(2, "process_kill");
  return BARMAN_WRITES.has(op) ? BACKUP : null;
}

/**
 * WAL-G: `delete` deletes only with --confirm (dry-run.ts); backup-fetch and catchup-fetch write a
 * backup into a data directory, replacing what the database there held.
 */
function walG({ args }: RuleInput): Hit | null {
  const [a, b] = verbsOf(args, set("--config"));
  if (a === "delete" || (a === "st" && (b === "rm" || b === "remove"))) return LOSS;
  if (a === "backup-fetch" || a === "catchup-fetch")
    return restoreInto(operandsOf(args, set("--config"))[1], LOSS);
  if (a === "st") return b === "put" || b === "transfer" ? BACKUP : null;
  return set("backup-push wal-push wal-receive catchup-push backup-mark copy").has(a ?? "") ? BACKUP : null;
}

/**
 * `restic forget --help`, `velero backup create -h`, `mc rb --help`: a help request after at most
 * two subcommand words prints and runs nothing, as the read-only table's help forms say; an option
 * or an operand before it keeps the verdict (docs/policy.md, help and read-only forms).
 */
function helpOnly(args: Args): boolean {
  const v = args.values;
  const last = v[v.length - 1];
  if (last === undefined || v.length > 3 || !/^(?:--help|-h|help)$/.test(last)) return false;
  return v.slice(0, -1).every((w, i) => !args.words[i]!.dynamic && /^[a-z][a-z0-9-]*$/.test(w));
}

const unlessHelp =
  (rule: Rule): Rule =>
  (input) =>
    helpOnly(input.args) ? null : rule(input);

const RULES: readonly [string | string[], Rule][] = [
  ["restic", restic],
  ["borg", borg],
  ["kopia", kopia],
  ["rsnapshot", rsnapshot],
  ["duplicity", duplicity],
  ["velero", velero],
  ["pgbackrest", pgbackrest],
  ["barman", barman],
  ["wal-g", walG],
  // A base backup writes a data directory and starts a backup on the server; -C creates a replication slot.
  ["pg_basebackup", () => BACKUP],
  // --delete-master-logs purges the server's binary logs once the dump is taken.
  [
    ["mysqldump", "mariadb-dump"],
    ({ args }) => (args.long("delete-master-logs") || args.long("delete-source-logs") ? LOSS : null),
  ],
  ...OBJECT_STORE_RULES,
  ...ARCHIVE_RULES,
];

export const BACKUP_RULES = table(RULES.map(([names, rule]) => [names, unlessHelp(rule)]));
