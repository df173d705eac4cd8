import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import { OBJECT_STORE_PROGRAMS } from "./programs-objects.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Backup tools and database dumps in the forms that only report (ADR 0033). A backup repository
 * is shared state: a listing that writes a lock file into it is not a proof, so restic is proven
 * only with `--no-lock` and borg only with `--bypass-lock`; without them the same listing is
 * Tier 1. A read that creates an object on a server is not a proof either: velero's `describe`,
 * `logs` and `version` create a request object in the cluster, so only its `get` forms are here,
 * and barman's `check` and `sync-info` create the server's directories when they are missing.
 * A dump is a read when it goes to stdout; a dump written to a file is not proven. Options that
 * run a program (`--password-command`, `--rsh`, backend commands given with `-o`) or point the
 * tool at another configuration are refused. programs-objects.ts adds the object-storage clients.
 */

const { entries, spec } = tablePart();

const words = (list: string): string[] => list.split(" ");

/** A flag given as `--name` or `--name=true` (Go and Python parsers both accept the second). */
function flag(args: readonly Word[], name: string): boolean {
  return args.some((w) => w.value === name || w.value === `${name}=true`);
}

// restic: every command that opens the repository takes a lock, a file written into it, unless
// `--no-lock` is given. -o sets backend options such as `sftp.command`, a program restic runs.
const RESTIC_VALUED = words(
  "-r --repo --repository-file -p --password-file --key-hint --cacert --tls-client-cert --cache-dir " +
    "--limit-download --limit-upload --pack-size --compression --retry-lock --stuck-request-timeout " +
    "--http-user-agent",
);
const RESTIC_LOCKING = new Set(words("snapshots ls stats find diff cat dump list check"));
const RESTIC_NO_REPOSITORY = new Set(words("version help features options cache"));
spec("restic", {
  valued: RESTIC_VALUED,
  valuedLetters: "rp",
  // dump -t/--target writes a file, cache --cleanup removes old caches.
  deny: words("-o --option --password-command --cleanup-cache --cleanup -t --target"),
  check: (args) => {
    const [sub, second] = operands(args, RESTIC_VALUED).map((w) => w.value);
    if (sub === undefined || RESTIC_NO_REPOSITORY.has(sub)) return true;
    const reads = RESTIC_LOCKING.has(sub) || (sub === "key" && second === "list");
    return reads && flag(args, "--no-lock");
  },
});

// borg: list, info, diff, check and the extractions that write nothing take a lock in the
// repository unless --bypass-lock, which borg accepts for these reads (and refuses for writes).
const BORG_VALUED = words(
  "--lock-wait --umask --upload-ratelimit --upload-buffer --debug-topic -r --repo --format --sort-by " +
    "--first --last -a --match-archives --glob-archives -P --prefix --pattern -e --exclude --exclude-from " +
    "--patterns-from --strip-components",
);
const BORG_LOCKING = new Set(words("list info diff check rlist rinfo repo-list repo-info"));
spec("borg", {
  valued: BORG_VALUED,
  // --rsh and --remote-path name programs to run; check --repair writes, --max-duration saves its progress.
  deny: words("--rsh --remote-path --debug-profile --repair --max-duration"),
  check: (args) => {
    const ops = operands(args, BORG_VALUED).map((w) => w.value);
    const sub = ops[0];
    if (sub === undefined || sub === "help" || sub === "version") return true;
    const extracts =
      (sub === "extract" && args.some((w) => /^(?:-n|--dry-run|--stdout)$/.test(w.value))) ||
      (sub === "export-tar" && ops.length >= 3 && ops[ops.length - 1] === "-");
    return (BORG_LOCKING.has(sub) || extracts) && flag(args, "--bypass-lock");
  },
});

// kopia: these open the repository as a reader (no write session, no automatic maintenance);
// `diff` is left out, it runs an external diff program.
spec("kopia", {
  valued: words("-p --password --log-level --file-log-level --console-timestamps"),
  deny: words("--config-file --log-dir --log-file --persist-credentials --to-file"),
  subs: {
    snapshot: { subs: subsOf(words("list ls verify estimate")) },
    snap: { subs: subsOf(words("list ls verify estimate")) },
    policy: { subs: subsOf(words("show list ls export")) },
    repository: { subs: { status: true, throttle: { subs: subsOf(["get"]) } } },
    repo: { subs: { status: true, throttle: { subs: subsOf(["get"]) } } },
    content: { subs: subsOf(words("list ls show stats verify")) },
    blob: { subs: subsOf(words("list ls show stats")) },
    index: { subs: { list: true, ls: true, inspect: true, epoch: { subs: subsOf(["list"]) } } },
    manifest: { subs: subsOf(words("list ls show")) },
    maintenance: { subs: subsOf(["info"]) },
    cache: { subs: subsOf(["info"]) },
    logs: { subs: subsOf(words("list ls show")) },
    session: { subs: subsOf(words("list ls")) },
    user: { subs: subsOf(words("list ls info")) },
    acl: { subs: subsOf(words("list ls")) },
    ...subsOf(words("ls list show cat")),
  },
});

// rsnapshot: an interval (alpha, daily, …) or sync takes a snapshot and rotates the oldest away
// (with -t it prints the commands instead, Tier 1); -c points it at another configuration, whose
// cmd_* settings name the programs it runs.
const RSNAPSHOT_READS = new Set(words("configtest du diff get-latest-snapshot version help"));
spec("rsnapshot", {
  deny: ["-c"],
  check: (args) => {
    const op = operands(args)[0]?.value;
    return op === undefined || RSNAPSHOT_READS.has(op);
  },
});

// duplicity: the status and listing commands, and verify, which compares the backup with local files.
const DUPLICITY_READS = new Set(words("collection-status list-current-files verify"));
spec("duplicity", {
  deny: words(
    "--gpg-binary --gpg-options --ssh-options --rsync-options --par2-options --log-file --log-fd --archive-dir",
  ),
  check: (args) => {
    const op = args.find((w) => !w.value.startsWith("-"))?.value;
    return op !== undefined && DUPLICITY_READS.has(op);
  },
});

// velero: only listings. describe, logs, `plugin get` and `version` (without --client-only) create a
// DownloadRequest or ServerStatusRequest object in the cluster to answer.
const VELERO_GET: ReadSpec = { subs: subsOf(["get"]) };
const VELERO_KINDS = words(
  "backup backups restore restores schedule schedules backup-location backup-locations " +
    "snapshot-location snapshot-locations",
);
spec("velero", {
  valued: words("-n --namespace --kubecontext -o --output -l --selector --features --colorized"),
  deny: ["--kubeconfig"],
  subs: {
    ...Object.fromEntries(
      words("backup restore schedule backup-location snapshot-location repo").map((k) => [k, VELERO_GET]),
    ),
    get: { subs: subsOf(VELERO_KINDS) },
    version: { check: (args) => flag(args, "--client-only") },
    client: { subs: { config: VELERO_GET } },
    completion: true,
  },
});

// pgbackrest: check forces a WAL switch on the primary, so it is not here. The command is the only
// operand (options as --name=value), so a stanza named like a command cannot stand in for one.
const PGBACKREST_READS = new Set(words("info verify version help repo-ls repo-get manifest server-ping"));
spec("pgbackrest", {
  deny: words("--config --config-path --config-include-path --cmd --cmd-ssh"),
  check: (args) => {
    if (args.some((w) => /^--(?:repo|pg)\d*-host-cmd(?:=|$)/.test(w.value))) return false;
    const ops = operands(args).map((w) => w.value);
    const [op] = ops;
    if (op === undefined) return true;
    return PGBACKREST_READS.has(op) && ops.length <= (op.startsWith("repo-") ? 2 : 1);
  },
});

// barman: the listings and reports. check (and sync-info) create the server's directories when missing.
spec("barman", {
  valued: words("-f --format --log-level --color"),
  deny: ["-c", "--config"],
  subs: subsOf(
    words(
      "list-backups list-backup show-backup show-backups status list-servers list-server show-servers " +
        "show-server diagnose replication-status list-files list-processes list-process",
    ),
  ),
});

// wal-g: listings, WAL verification and the storage tool's reads; --config may name commands to run.
spec("wal-g", {
  deny: ["--config"],
  subs: {
    ...subsOf(words("backup-list wal-show wal-verify")),
    st: { subs: { ls: true, cat: true, check: { subs: subsOf(["read"]) } } },
  },
});

// Dumps to stdout read the database; -f/--file writes the dump into a file.
const PG_DUMP: ReadSpec = { deny: ["-f", "--file"], valuedLetters: "dhpUnNtTFjZESel" };
spec("pg_dump", PG_DUMP);
spec("pg_dumpall", PG_DUMP);
// mysqldump: -r and --tab write files (the latter on the server), --delete-master-logs purges the
// binary logs, the flushes and --dump-slave change the server, -x and --master-data lock every table.
spec("mysqldump", {
  deny: words(
    "-r --result-file -T --tab --delete-master-logs --delete-source-logs -F --flush-logs --flush-privileges " +
      "--dump-slave --dump-replica --master-data --source-data -x --lock-all-tables --defaults-file " +
      "--defaults-extra-file --plugin-dir --default-auth --init-command",
  ),
  valuedLetters: "hPuSwp",
});
entries.set("mariadb-dump", entries.get("mysqldump")!);
// mongodump writes ./dump unless the output is stdout: a bare --archive, or --out -.
spec("mongodump", { deny: ["--config"], check: mongodumpToStdout });

function mongodumpToStdout(args: readonly Word[]): boolean {
  let stdout = false;
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    const out = /^(?:-o|--out)$/.test(v) ? args[++i]?.value : /^(?:-o=?|--out=)(.+)$/.exec(v)?.[1];
    if (out !== undefined || /^(?:-o|--out)$/.test(v)) {
      if (out !== "-") return false;
      stdout = true;
    } else if (v === "--archive" || v === "--archive=-") {
      stdout = true;
    } else if (v.startsWith("--archive=")) {
      return false;
    }
  }
  return stdout;
}

for (const [name, entry] of OBJECT_STORE_PROGRAMS) entries.set(name, entry);

export const BACKUP_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
