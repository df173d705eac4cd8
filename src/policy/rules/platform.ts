import { type Args, type Hit, hit, type Rule, type RuleInput, table } from "./args.js";
import { DATA_RULES } from "./data.js";
import { judged } from "./delivery-forges.js";
import { ADDON_RULES } from "./platform-addons.js";
import { SCHEDULER_RULES } from "./platform-schedulers.js";

/**
 * Data platforms. Files in a distributed file system are the platform's data: removing them,
 * truncating them or emptying the trash loses them (Tier 3, file_destruction); writing, moving
 * and replicating them are Tier 2 (filesystem_change), and so are their modes (permission_change).
 * Formatting a NameNode or deleting a block pool loses the whole namespace (Tier 3,
 * storage_destruction). Daemons started, stopped or reconfigured are Tier 2 (service_change),
 * jobs killed or moved are Tier 2 (container_change), and a jar, a class, a script or a REPL's
 * input run on the cluster is code the call does not show (Tier 2, script_file). The schedulers
 * are in platform-schedulers.ts, the Kubernetes add-ons in platform-addons.ts.
 */

const GONE = hit(3, "file_destruction");
const WRITE = hit(2, "filesystem_change");
const MODE = hit(2, "permission_change");
const FORMAT = hit(3, "storage_destruction");
const SERVICE = hit(2, "service_change");
const JOB = hit(2, "container_change");
const SCRIPT = hit(2, "script_file");
const CONFIG = hit(2, "config_change");

/** Hadoop's generic options, each with a value; `-Dname=value` carries its own. */
const GENERIC_VALUED = new Set([
  "-fs",
  "-D",
  "-conf",
  "-libjars",
  "-files",
  "-archives",
  "-jt",
  "-tokenCacheFile",
]);

/** The command word after the generic options (`-rm`, `-report`, `list`) and what follows it. */
function commandOf(a: Args): { command: string; rest: Args } | null {
  for (let i = 0; i < a.length; i++) {
    const v = a.values[i]!;
    if (GENERIC_VALUED.has(v)) i++;
    else if (!/^-D./.test(v)) return { command: v, rest: a.from(i + 1) };
  }
  return null;
}

/** The scripts' options whose value is the next word. */
const SCRIPT_VALUED = new Set(["--config", "--loglevel", "--daemon", "--hosts", "--hostnames"]);

/** `--daemon start|stop` runs or stops the daemon the subcommand names, `status` only asks; null without it. */
function daemonAction(a: Args): Hit | null | undefined {
  const action = a.optionValue("--daemon");
  if (action === undefined) return undefined;
  return action === "status" ? null : SERVICE;
}

/**
 * Hadoop's launcher scripts (`hdfs`, `hadoop`, `mapred`, `yarn`) share their front: `--daemon ACTION`
 * starts or stops a daemon, and their own options come before the subcommand the judge is given.
 */
function launcher(judge: (sub: string, rest: Args) => Hit | null): Rule {
  return ({ args }) => {
    const daemon = daemonAction(args);
    if (daemon !== undefined) return daemon;
    const found = args.subcommand(SCRIPT_VALUED);
    return found === null ? null : judge(found.value, args.from(found.index + 1));
  };
}

/** A subcommand that names a Java class: the scripts run any class they are given. */
const CLASS_NAME = /^[a-z_$][\w$]*(?:\.[\w$]+)+$/i;

const FS_GONE = /^-(?:rm|rmr|expunge|truncate|deleteSnapshot)$/;
const FS_WRITE =
  /^-(?:put|copyFromLocal|moveFromLocal|mkdir|mv|cp|touchz|touch|appendToFile|setrep|createSnapshot|renameSnapshot|concat)$/;

/** The file system shell (`hdfs dfs`, `hadoop fs`, Hive's `dfs`): one command, named by its option word. */
function fsCommand(command: string): Hit | null {
  if (FS_GONE.test(command)) return GONE;
  // -rmdir removes empty directories only: nothing stored is lost.
  if (command === "-rmdir") return hit(2, "file_destruction");
  if (FS_WRITE.test(command)) return WRITE;
  return /^-(?:chmod|chown|chgrp|setfacl|setfattr)$/.test(command) ? MODE : null;
}

function fsShell(a: Args): Hit | null {
  return fsCommand(commandOf(a)?.command ?? "");
}

/** `distcp -delete` removes what the source lacks from the target; otherwise it copies in. */
function distcp(a: Args): Hit {
  return a.has("-delete") ? GONE : WRITE;
}

/**
 * `hdfs dfsadmin`: every command but its reports (and `-metasave` and `-fetchImage`, which write
 * a file) changes the NameNode or the DataNodes.
 * Finalizing an upgrade deletes the previous layout a rollback needs, and deleting a block pool
 * deletes its blocks.
 */
function dfsadmin(a: Args): Hit | null {
  const found = commandOf(a);
  if (found === null) return null;
  const { command, rest } = found;
  const next = rest.at(0) ?? "";
  if (command === "-deleteBlockPool" || command === "-finalizeUpgrade") return FORMAT;
  if (command === "-rollingUpgrade")
    return next === "finalize" ? FORMAT : next === "prepare" ? SERVICE : null;
  if (command === "-safemode") return /^(?:get|wait)$/.test(next) ? null : SERVICE;
  if (command === "-restoreFailedStorage") return next === "check" ? null : SERVICE;
  if (command === "-reconfig") return rest.at(2) === "start" ? SERVICE : null;
  const reads =
    /^-(?:report|printTopology|getDatanodeInfo|getVolumeReport|listOpenFiles|getBalancerBandwidth|metasave|fetchImage|help)$/;
  return reads.test(command) ? null : SERVICE;
}

/** HDFS daemons; these options of theirs wipe or rewind the metadata they keep. */
const HDFS_DAEMONS =
  /^(?:namenode|datanode|journalnode|secondarynamenode|zkfc|balancer|mover|portmap|nfs3|router|dfsrouter|httpfs|sps|backupnode|checkpointnode)$/;
const WIPES = /^-(?:format|formatZK|rollback|bootstrapStandby|recover)$/;

/** Admin tools of HDFS whose listing and getting commands read and whose others set things. */
function settings(a: Args): Hit | null {
  const command = commandOf(a)?.command;
  if (command === undefined) return null;
  return /^-(?:list|get|verify|check|help)/.test(command) ? null : WRITE;
}

function hdfs(sub: string, rest: Args): Hit | null {
  if (sub === "dfs") return fsShell(rest);
  if (sub === "dfsadmin") return dfsadmin(rest);
  // fsck -delete removes the corrupt files it finds; -move puts them in /lost+found.
  if (sub === "fsck") return rest.has("-delete") ? GONE : rest.has("-move") ? WRITE : null;
  if (sub === "haadmin") return settings(rest) === null ? null : SERVICE;
  if (/^(?:ec|storagepolicies|cacheadmin|crypto)$/.test(sub)) return settings(rest);
  if (sub === "debug") return rest.at(0) === "recoverLease" ? WRITE : null;
  if (sub === "diskbalancer") return rest.has("-report") || rest.has("-query") ? null : SERVICE;
  if (HDFS_DAEMONS.test(sub)) return rest.values.some((v) => WIPES.test(v)) ? FORMAT : SERVICE;
  return CLASS_NAME.test(sub) ? SCRIPT : null;
}

/** `hadoop key delete` destroys a key: what was encrypted with it can no longer be read. */
function hadoop(sub: string, rest: Args): Hit | null {
  const command = commandOf(rest)?.command;
  switch (sub) {
    case "fs":
    case "dfs":
      return fsShell(rest);
    case "jar":
      return SCRIPT;
    case "distcp":
      return distcp(rest);
    case "archive":
      return WRITE;
    case "key":
      return command === "delete"
        ? hit(3, "data_store_destruction")
        : command === "create" || command === "roll"
          ? CONFIG
          : null;
    case "credential":
      return command === "create" || command === "delete" ? CONFIG : null;
    case "daemonlog":
      return rest.has("-setlevel") ? SERVICE : null;
    default:
      return CLASS_NAME.test(sub) ? SCRIPT : null;
  }
}

/** MapReduce: jobs killed, failed or reprioritised, and jobs submitted (their code runs). */
function mapred(sub: string, rest: Args): Hit | null {
  const command = commandOf(rest)?.command ?? "";
  if (sub === "job") {
    if (command === "-submit") return SCRIPT;
    return /^-(?:kill|kill-task|fail-task|set-priority)$/.test(command) ? JOB : null;
  }
  if (sub === "pipes" || sub === "streaming") return SCRIPT;
  if (sub === "distcp") return distcp(rest);
  if (sub === "archive" || sub === "frameworkuploader") return WRITE;
  if (sub === "historyserver") return SERVICE;
  if (sub === "hsadmin") return /^-(?:getGroups|help)$/.test(command) ? null : SERVICE;
  return CLASS_NAME.test(sub) ? SCRIPT : null;
}

const YARN_DAEMONS =
  /^(?:resourcemanager|nodemanager|timelineserver|timelinereader|proxyserver|router|sharedcachemanager|registrydns|globalpolicygenerator)$/;
const APP_ACTS =
  /^-(?:kill|updatePriority|changeQueue|movetoqueue|updateLifetime|signal|launch|stop|start|flex|save|enableFastLaunch|upgrade|decommission)$/;
const NODE_PACKAGES = /^(?:add|remove|install|upgrade|up|global|link|unlink|dedupe|publish)$/;

/**
 * `yarn` is both Hadoop's YARN client and the JavaScript package manager. The words that are
 * YARN's subcommands are judged as YARN's; the package manager's verbs that change what is
 * installed are Tier 2 (package_change), as for npm.
 */
function yarn(sub: string, rest: Args): Hit | null {
  if (sub === "application" || sub === "app") {
    // A YARN service destroyed is gone with its definition and its state in HDFS.
    if (rest.has("-destroy")) return hit(3, "infrastructure_destruction");
    return rest.values.some((v) => APP_ACTS.test(v)) ? JOB : null;
  }
  if (sub === "applicationattempt") return rest.has("-fail") ? JOB : null;
  if (sub === "container") return rest.has("-signal") ? JOB : null;
  if (sub === "rmadmin") return settings(rest) === null ? null : SERVICE;
  if (sub === "schedulerconf") return SERVICE;
  if (sub === "jar") return SCRIPT;
  if (sub === "daemonlog") return rest.has("-setlevel") ? SERVICE : null;
  if (YARN_DAEMONS.test(sub)) {
    const wipes = rest.has("-format-state-store") || rest.has("-remove-application-from-state-store");
    return wipes ? hit(3, "data_store_destruction") : SERVICE;
  }
  return NODE_PACKAGES.test(sub.toLowerCase()) ? hit(2, "package_change") : null;
}

/** The SQL clients' rule (data.ts): what a statement given to a Hive or Spark shell does to stored data. */
const sqlClient: Rule = (input) => DATA_RULES.get("psql")?.(input) ?? null;

/** The highest of some verdicts, the first on a tie. */
function highest(hits: readonly (Hit | null)[]): Hit | null {
  return hits.reduce<Hit | null>(
    (best, h) => (h !== null && (best === null || h.tier > best.tier) ? h : best),
    null,
  );
}

const CODE = hit(2, "opaque_program");
/** `TRANSFORM` pipes rows through a program; `reflect` and `java_method` call Java methods. */
const RUNS_CODE = /\b(?:transform|reflect2?|java_method)\b/i;

/**
 * The shells' own commands among the statements: Hive's `dfs …` is the file system shell, and
 * `!cmd` (Hive) or `!sh cmd` (beeline) runs a shell command, as unseen here as the program of a
 * `TRANSFORM … USING 'cmd'`.
 */
function shellCommand(statement: string): Hit | null {
  const dfs = /^\s*dfs\s+(\S+)/i.exec(statement);
  if (dfs !== null) return fsCommand(dfs[1]!);
  return /^\s*!/.test(statement) || RUNS_CODE.test(statement) ? CODE : null;
}

/** hive, beeline, spark-sql: statements given with -e, on stdin, or in a file (-f, -i) the call does not show. */
function sqlShell(input: RuleInput): Hit | null {
  const { args, stdin } = input;
  const statements = (stdin === null ? args.values : [...args.values, stdin]).flatMap((t) =>
    t.split(/[;\n]/),
  );
  const file = args.values.some((v) => /^(?:-f|-i|--init|--property-file)$/.test(v));
  return highest([sqlClient(input), file ? SCRIPT : null, ...statements.map(shellCommand)]);
}

/** spark-submit runs the application it is given; `--kill` ends a driver, `--status` asks about one. */
function sparkSubmit({ args }: RuleInput): Hit | null {
  if (args.long("kill")) return JOB;
  return args.long("status") ? null : SCRIPT;
}

/** Flink: `run` and `info` run the program's main method; a savepoint disposed of is gone. */
function flink({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value;
  if (verb === "run" || verb === "run-application" || verb === "info") return SCRIPT;
  if (verb === "cancel" || verb === "stop") return JOB;
  if (verb === "savepoint")
    return args.has("-d") || args.long("dispose")
      ? hit(3, "data_store_destruction")
      : hit(2, "data_store_change");
  return verb === "checkpoint" ? hit(2, "data_store_change") : null;
}

export const PLATFORM_RULES = table([
  ["hdfs", judged(launcher(hdfs))],
  ["hadoop", judged(launcher(hadoop))],
  ["mapred", judged(launcher(mapred))],
  ["yarn", judged(launcher(yarn))],
  [["hive", "beeline", "spark-sql"], sqlShell],
  ["spark-submit", judged(sparkSubmit)],
  // A REPL runs what it reads on stdin or from -i.
  [["spark-shell", "pyspark", "sparkr"], judged(() => hit(2, "opaque_program"))],
  ["flink", judged(flink)],
  ...SCHEDULER_RULES,
  ...ADDON_RULES,
]);
