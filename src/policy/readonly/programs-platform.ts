import { NOMAD_VALUED } from "../rules/option-lists.js";
import { DYNAMIC, type Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { ADDON_PROGRAMS } from "./programs-addons.js";
import type { ReadEntry, ReadSpec } from "./spec.js";
import { sqlArgReadsOnly } from "./sql.js";

/**
 * Data platforms and schedulers: Hadoop's clients (HDFS, MapReduce), the SQL shells of Hive and
 * Spark, Flink's job listing, and the reporting commands of Airflow, Prefect, Dagster and Nomad.
 * What these tools run besides a read is code: a jar or a script handed to the cluster, a DAG or
 * a code location imported to list it, a class loaded through a property. Such forms are left
 * out, and so is every option that loads jars, sets properties or names another configuration.
 * `yarn` is not here: the same name is the JavaScript package manager, which runs a package's
 * script for a word it does not know (`yarn logs`). The Kubernetes add-ons are in
 * programs-addons.ts and join this part of the table.
 */

const { entries, spec } = tablePart();

/** A word that may turn into an option, or into nothing, at run time. */
const unseen = (w: Word): boolean =>
  (w.dynamic && w.value.startsWith(DYNAMIC)) || (w.glob && /^[*?[{]/.test(w.value));

/**
 * Hadoop's generic options (GenericOptionsParser), which its tools take before their command:
 * `-fs` names the file system; properties (`-D`), a configuration file, jars, files and archives
 * change what the client loads, so they are refused.
 */
const LOADS = /^-(?:D|conf$|libjars$|files$|archives$|jt$|tokenCacheFile$)/;

/** The words after the generic options, or null when one of them loads something. */
function afterGeneric(args: readonly Word[]): readonly Word[] | null {
  if (args.some(unseen)) return null;
  let i = 0;
  while (args[i]?.value === "-fs") i += 2;
  return LOADS.test(args[i]?.value ?? "") ? null : args.slice(i);
}

/**
 * Hadoop's admin tools name their command as an option word (`-report`, `-safemode get`): the
 * commands that only report, each with a test of the words after it where some of its forms act.
 */
function hadoopReads(reads: Readonly<Record<string, RegExp | true>>): ReadSpec {
  return {
    check: (args) => {
      const [command, ...rest] = afterGeneric(args) ?? [];
      const want =
        command !== undefined && Object.hasOwn(reads, command.value) ? reads[command.value] : undefined;
      if (want === undefined) return false;
      return want === true || want.test(rest.map((w) => w.value).join(" "));
    },
  };
}

/** A Hadoop tool run through ToolRunner whose every command reads: only the generic options matter. */
const TOOL: ReadSpec = { check: (args) => afterGeneric(args) !== null };

/** `classpath --jar PATH` writes the class path into a jar. */
const CLASSPATH: ReadSpec = { deny: ["--jar"] };

/**
 * The file system shell (`hdfs dfs`, `hadoop fs`): one command per call, the first word after the
 * generic options. `-get`, `-copyToLocal` and `-getmerge` write local files and are not here.
 */
const FS_READS = ["-ls", "-lsr", "-cat", "-text", "-tail", "-head", "-du", "-dus", "-df", "-count", "-stat"];
const FS_SHELL = hadoopReads(
  subsOf([...FS_READS, "-test", "-checksum", "-find", "-getfacl", "-getfattr", "-usage", "-help"]),
);

/**
 * The scripts' own options: `--config` names another configuration directory, `--daemon` starts
 * or stops a daemon, and `--workers`, `--hosts` and `--hostnames` run the command on other hosts.
 */
const HADOOP_SCRIPT: ReadSpec = {
  words: true,
  valued: ["--loglevel"],
  deny: ["--config", "--daemon", "--workers", "--hosts", "--hostnames", "--buildpaths"],
};

spec("hadoop", {
  ...HADOOP_SCRIPT,
  subs: {
    fs: FS_SHELL,
    dfs: FS_SHELL,
    key: hadoopReads({ list: true }),
    credential: hadoopReads({ list: true }),
    daemonlog: hadoopReads({ "-getlevel": true }),
    classpath: CLASSPATH,
    ...subsOf(["version", "checknative", "envvars", "jnipath"]),
  },
});

// HDFS: -metasave and -fetchImage write files, fsck -delete and -move change what it finds.
spec("hdfs", {
  ...HADOOP_SCRIPT,
  subs: {
    dfs: FS_SHELL,
    dfsadmin: hadoopReads({
      "-report": true,
      "-printTopology": true,
      "-getDatanodeInfo": true,
      "-getVolumeReport": true,
      "-listOpenFiles": true,
      "-getBalancerBandwidth": true,
      "-safemode": /^(?:get|wait)$/,
      "-rollingUpgrade": /^(?:query)?$/,
      "-restoreFailedStorage": /^check$/,
      "-reconfig": /^(?:namenode|datanode) \S+ (?:status|properties)$/,
      "-help": true,
    }),
    fsck: {
      check: (args) => afterGeneric(args) !== null && !args.some((w) => /^-(?:delete|move)$/.test(w.value)),
    },
    haadmin: hadoopReads({ "-getServiceState": true, "-getAllServiceState": true, "-checkHealth": true }),
    ec: hadoopReads({
      "-listPolicies": true,
      "-getPolicy": true,
      "-listCodecs": true,
      "-verifyClusterSetup": true,
    }),
    storagepolicies: hadoopReads({ "-listPolicies": true, "-getStoragePolicy": true }),
    cacheadmin: hadoopReads({ "-listPools": true, "-listDirectives": true }),
    crypto: hadoopReads({ "-listZones": true, "-getFileEncryptionInfo": true }),
    getconf: TOOL,
    groups: TOOL,
    lsSnapshottableDir: TOOL,
    lsSnapshot: TOOL,
    snapshotDiff: TOOL,
    classpath: CLASSPATH,
    ...subsOf(["version", "envvars", "jmxget"]),
  },
});

// MapReduce: a job's history with -outfile writes it to a file.
spec("mapred", {
  ...HADOOP_SCRIPT,
  subs: {
    job: hadoopReads({
      ...subsOf(["-list", "-status", "-counter", "-events", "-logs", "-list-attempt-ids"]),
      ...subsOf(["-list-active-trackers", "-list-blacklisted-trackers"]),
      "-history": /^(?!(?:.* )?-outfile\b)/,
    }),
    queue: hadoopReads({ "-list": true, "-info": true, "-showacls": true }),
    classpath: CLASSPATH,
    ...subsOf(["version", "envvars"]),
  },
});

/**
 * A SQL shell of the Hadoop world given its statements with `-e`. The statement is read by sql.ts
 * as every client's is, and refused besides where Hive and Spark run code from it: `TRANSFORM …
 * USING 'script'` pipes rows through a program, `reflect` and `java_method` call a Java method,
 * and `${…}` is replaced from variables and the environment before the statement is parsed.
 * Only the options listed are allowed: the others load jars, set properties, read statements or
 * variables from files, or (beeline's `-d`) load a driver class.
 */
const RUNS_CODE = /\$\{|\b(?:transform|reflect2?|java_method|using)\b/i;

interface SqlShell {
  /** Options whose value is the next word. */
  valued: RegExp;
  /** Options that stand alone (or carry their value after `=`). */
  flags: RegExp;
  /** A further test of an option's value (beeline's connection URL). */
  value?: (option: string, value: string) => boolean;
}

function sqlShell(shell: SqlShell): ReadSpec {
  return {
    check: (args) => {
      const statements: Word[] = [];
      for (let i = 0; i < args.length; i++) {
        const w = args[i]!;
        const next = args[i + 1];
        if (w.dynamic) return false;
        if (w.value === "-e" || shell.valued.test(w.value)) {
          if (next === undefined || next.dynamic) return false;
          if (w.value === "-e") statements.push(next);
          else if (shell.value?.(w.value, next.value) === false) return false;
          i++;
        } else if (!shell.flags.test(w.value)) return false;
      }
      return !statements.some((w) => RUNS_CODE.test(w.value)) && sqlArgReadsOnly(statements, []);
    },
  };
}

spec(
  "spark-sql",
  sqlShell({
    valued:
      /^--(?:master|name|database|queue|num-executors|executor-memory|executor-cores|driver-memory|driver-cores|total-executor-cores)$/,
    flags: /^(?:-S|--silent|-v|--verbose)$/,
  }),
);
spec("hive", sqlShell({ valued: /^--database$/, flags: /^(?:-S|--silent|-v|--verbose)$/ }));
// A JDBC URL may carry `initFile=` (statements run on connect) and, after `?` and `#`, settings
// and variables.
spec(
  "beeline",
  sqlShell({
    valued: /^-[unpaw]$/,
    flags:
      /^--(?:silent|verbose|showHeader|outputformat|incremental|maxWidth|maxColumnWidth|numberFormat|headerInterval|fastConnect|showWarnings|nullemptystring|delimiterForDSV|color)(?:=[\w.,|:-]*)?$/,
    value: (option, value) => option !== "-u" || !/[?#]|initfile/i.test(value),
  }),
);

// Spark and Flink clients: only the help and version forms (the rest runs an application).
for (const name of ["spark-submit", "spark-shell", "pyspark", "sparkr"]) spec(name, { check: () => false });

/** Flink's `list` reports the cluster's jobs; `info` runs the program's main method to plan it. */
spec("flink", { deny: ["-D"], valuedLetters: "mtz", subs: subsOf(["list"]) });

/**
 * Airflow: the commands that read the metadata database or the configuration. Those that list or
 * show DAGs (`dags list|show|state|report|next-execution`, `tasks list|state`) import every DAG
 * file, which is Python code, and are left out as a build tool's reporting tasks are. `info
 * --file-io` uploads the report to a public service.
 */
const LISTS = (...more: string[]): ReadSpec => ({ subs: subsOf(["list", ...more]) });
spec("airflow", {
  subs: {
    ...subsOf(["version", "cheat-sheet"]),
    info: { deny: ["--file-io"] },
    config: { subs: subsOf(["get-value", "list"]) },
    connections: LISTS("get"),
    variables: LISTS("get"),
    pools: LISTS("get"),
    users: LISTS(),
    roles: LISTS(),
    providers: LISTS("get"),
    jobs: { subs: subsOf(["check"]) },
    db: { subs: subsOf(["check", "check-migrations"]) },
    dags: { subs: subsOf(["list-runs", "list-jobs"]) },
  },
});

// dbt: every command parses the project (and writes target/); only help and version are proven.
spec("dbt", { subs: {} });

/** Prefect: the API server's objects listed and inspected; no project code is loaded. */
const PREFECT_READS: ReadSpec = { subs: subsOf(["ls", "inspect"]) };
spec("prefect", {
  valued: ["-p", "--profile"],
  subs: {
    version: true,
    config: { subs: subsOf(["view"]) },
    profile: PREFECT_READS,
    deployment: PREFECT_READS,
    flow: { subs: subsOf(["ls"]) },
    "flow-run": { subs: subsOf(["ls", "inspect", "logs"]) },
    "task-run": { subs: subsOf(["ls", "inspect"]) },
    "work-pool": { subs: subsOf(["ls", "inspect", "preview"]) },
    "work-queue": { subs: subsOf(["ls", "inspect", "preview"]) },
    block: { subs: { ...subsOf(["ls", "inspect"]), type: PREFECT_READS } },
    "concurrency-limit": PREFECT_READS,
    "global-concurrency-limit": PREFECT_READS,
    variable: { subs: subsOf(["ls", "get", "inspect"]) },
    automation: PREFECT_READS,
    artifact: PREFECT_READS,
  },
});

// Dagster: listing jobs, assets or schedules imports the code location; the instance's runs do not.
spec("dagster", { subs: { instance: { subs: subsOf(["info"]) }, run: { subs: subsOf(["list"]) } } });

/**
 * Nomad: the cluster's jobs, allocations, nodes and settings read through the API. `job plan`
 * is the scheduler's dry run (nothing is registered); `alloc exec`, `job action`, `operator api`
 * and `debug` (it writes an archive) are left out, and `fmt` rewrites files unless told not to write.
 */
const NOMAD_ACL = { subs: subsOf(["list", "info"]) };
spec("nomad", {
  words: true,
  valued: [...NOMAD_VALUED],
  subs: {
    ...subsOf(["status", "version", "agent-info", "monitor"]),
    job: {
      subs: subsOf([
        "status",
        "inspect",
        "history",
        "deployments",
        "allocs",
        "validate",
        "plan",
        "scaling-events",
      ]),
    },
    node: {
      subs: {
        status: true,
        pool: { subs: subsOf(["list", "info", "jobs", "nodes"]) },
        meta: { subs: subsOf(["read"]) },
      },
    },
    alloc: { subs: subsOf(["status", "logs", "fs", "checks"]) },
    eval: { subs: subsOf(["list", "status"]) },
    deployment: { subs: subsOf(["list", "status"]) },
    server: { subs: subsOf(["members"]) },
    operator: {
      subs: {
        raft: { subs: subsOf(["list-peers"]) },
        autopilot: { subs: subsOf(["get-config", "health"]) },
        scheduler: { subs: subsOf(["get-config"]) },
        snapshot: { subs: subsOf(["inspect"]) },
        root: { subs: { keyring: { subs: subsOf(["list"]) } } },
        metrics: true,
      },
    },
    namespace: { subs: subsOf(["list", "status", "inspect"]) },
    quota: { subs: subsOf(["list", "status", "inspect"]) },
    volume: { subs: subsOf(["status"]) },
    plugin: { subs: subsOf(["status"]) },
    acl: {
      subs: {
        policy: NOMAD_ACL,
        role: NOMAD_ACL,
        "auth-method": NOMAD_ACL,
        "binding-rule": NOMAD_ACL,
        token: { subs: subsOf(["list", "info", "self"]) },
      },
    },
    var: { subs: subsOf(["list", "get"]) },
    service: { subs: subsOf(["list", "info"]) },
    sentinel: { subs: subsOf(["list", "read"]) },
    recommendation: { subs: subsOf(["list", "info"]) },
    license: { subs: subsOf(["get"]) },
    config: { subs: subsOf(["validate"]) },
    fmt: { check: (args) => args.some((w) => w.value === "-write=false") },
  },
});

for (const [name, entry] of ADDON_PROGRAMS) spec(name, entry);

export const PLATFORM_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
