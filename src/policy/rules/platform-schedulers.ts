import { type Args, type Hit, hit, type Rule, type RuleInput } from "./args.js";
import { judged, wordsOf } from "./delivery-forges.js";
import { NOMAD_VALUED } from "./option-lists.js";

/**
 * Schedulers and pipelines. Triggering, pausing, clearing or cancelling their runs changes what
 * runs and when (Tier 2, schedule_change); running a task, a flow, a job or a test in place runs
 * the project's code (Tier 2, script_file); their variables, connections and pools are settings
 * (Tier 2, config_change). Deleting a DAG's, a flow's or a run's records, wiping their history
 * and resetting or cleaning the metadata database lose those records (Tier 3,
 * data_store_destruction); other deletions of their objects are Tier 3 as the generic rule has
 * them (destructive_subcommand). Nomad's jobs are cluster workloads (container_change), purged
 * ones are gone with their history (infrastructure_destruction).
 */

const SCHEDULE = hit(2, "schedule_change");
const SCRIPT = hit(2, "script_file");
const CONFIG = hit(2, "config_change");
const SERVICE = hit(2, "service_change");
const ACCOUNTS = hit(2, "account_change");
const RECORDS_GONE = hit(3, "data_store_destruction");
const MIGRATE = hit(2, "data_store_change");
const GONE = hit(3, "destructive_subcommand");

const NONE: ReadonlySet<string> = new Set();

/** The first two operands, lower-cased: the group and the verb of a `<tool> <group> <verb>` CLI. */
function path(a: Args, valued: ReadonlySet<string> = NONE): [string, string] {
  const [group = "", verb = ""] = wordsOf(a, valued);
  return [group, verb];
}

/** Verdicts by group and verb of a `<tool> <group> <verb>` CLI. */
type VerbTable = Readonly<Record<string, Readonly<Record<string, Hit>>>>;

/** What a table says of a group's verb: own entries only (`constructor` is nobody's verb). */
function verdictOf(t: VerbTable, group: string, verb: string): Hit | null {
  const verbs = Object.hasOwn(t, group) ? t[group]! : {};
  return Object.hasOwn(verbs, verb) ? verbs[verb]! : null;
}

/** What a verb of one of Airflow's groups does; null when it reads. */
const AIRFLOW: VerbTable = {
  dags: {
    delete: RECORDS_GONE,
    trigger: SCHEDULE,
    pause: SCHEDULE,
    unpause: SCHEDULE,
    backfill: SCHEDULE,
    test: SCRIPT,
  },
  tasks: { run: SCRIPT, test: SCRIPT, clear: SCHEDULE },
  backfill: { create: SCHEDULE, cancel: SCHEDULE, pause: SCHEDULE, unpause: SCHEDULE },
  variables: { set: CONFIG, import: CONFIG, delete: CONFIG },
  connections: { add: CONFIG, import: CONFIG, delete: CONFIG, "create-default-connections": CONFIG },
  pools: { set: CONFIG, import: CONFIG, delete: CONFIG },
  users: {
    create: ACCOUNTS,
    delete: ACCOUNTS,
    "add-role": ACCOUNTS,
    "remove-role": ACCOUNTS,
    import: ACCOUNTS,
  },
  roles: {
    create: ACCOUNTS,
    delete: ACCOUNTS,
    "add-perms": ACCOUNTS,
    "del-perms": ACCOUNTS,
    import: ACCOUNTS,
  },
  kubernetes: { "cleanup-pods": hit(2, "container_change") },
  celery: { worker: SERVICE, flower: SERVICE, stop: SERVICE },
};

const AIRFLOW_DAEMONS =
  /^(?:scheduler|webserver|triggerer|dag-processor|api-server|standalone|kerberos|internal-api|fastapi-api)$/;

/**
 * Airflow's metadata database: `reset` drops it, `clean` and `drop-archived` delete old records
 * and `downgrade` drops what newer versions added (Tier 3); `migrate`, `upgrade` and `init`
 * change its schema. `clean --dry-run` and `--show-sql-only` only print.
 */
function airflowDb(verb: string, a: Args): Hit | null {
  if (a.long("show-sql-only") || (verb === "clean" && a.long("dry-run"))) return null;
  if (/^(?:reset|clean|drop-archived|downgrade)$/.test(verb)) return RECORDS_GONE;
  return /^(?:migrate|upgrade|init)$/.test(verb) ? MIGRATE : null;
}

function airflow({ args }: RuleInput): Hit | null {
  const [group, verb] = path(args);
  if (AIRFLOW_DAEMONS.test(group)) return SERVICE;
  if (group === "db") return airflowDb(verb, args);
  if (group === "rotate-fernet-key") return CONFIG;
  if (group === "sync-perm") return ACCOUNTS;
  return verdictOf(AIRFLOW, group, verb);
}

const DBT_VALUED = new Set([
  "--profiles-dir",
  "--project-dir",
  "--target",
  "-t",
  "--profile",
  "--vars",
  "--log-path",
  "--target-path",
  "--log-level",
  "--log-format",
  "--printer-width",
]);

/**
 * dbt: `run`, `build`, `seed`, `snapshot`, `clone` and `retry` create and replace tables in the
 * warehouse; with `--full-refresh` (`-f`) incremental models and seeds are dropped and rebuilt
 * (Tier 3). `test` runs the project's SQL and its hooks, `run-operation` any macro. `compile`,
 * `ls`, `parse`, `debug` and `docs generate` stay Tier 1: they write target/ and may query.
 */
function dbt({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(DBT_VALUED)?.value;
  if (verb === "run" || verb === "build" || verb === "seed") {
    return args.long("full-refresh") || args.has("-f") ? hit(3, "data_store_destruction") : MIGRATE;
  }
  if (verb === "snapshot" || verb === "clone" || verb === "retry") return MIGRATE;
  if (verb === "test" || verb === "run-operation") return SCRIPT;
  return verb === "deps" ? hit(2, "package_change") : null;
}

const PREFECT_VALUED = new Set(["-p", "--profile"]);
/** Verbs that change what Prefect schedules or how much of it runs at once. */
const PREFECT_SCHEDULES =
  /^(?:run|pause|resume|cancel|retry|create|update|apply|set-schedule|clear-schedule|set-concurrency-limit|clear-concurrency-limit|enable|disable|reset)$/;

/**
 * Prefect: a flow run's or an artifact's records deleted are gone; other objects deleted are
 * Tier 3 as the generic rule has them. `deploy`, `flow serve` and `flow-run execute` run the
 * project's code and steps; blocks and variables are settings; the client's own profiles and
 * configuration stay Tier 1.
 */
function prefect({ args }: RuleInput): Hit | null {
  const [group, verb] = path(args, PREFECT_VALUED);
  if (group === "deploy" || (group === "flow" && verb === "serve")) return SCRIPT;
  if (group === "worker" || group === "agent" || (group === "server" && verb === "start")) return SERVICE;
  if (group === "server" && verb === "database") {
    const action = wordsOf(args, PREFECT_VALUED)[2];
    return action === "reset" || action === "downgrade"
      ? RECORDS_GONE
      : action === "upgrade"
        ? MIGRATE
        : null;
  }
  if (group === "profile" || group === "config" || group === "cloud") return null;
  if (verb === "delete") return group === "flow-run" || group === "artifact" ? RECORDS_GONE : GONE;
  if (group === "flow-run" && verb === "execute") return SCRIPT;
  if (group === "block" || group === "variable")
    return /^(?:create|register|set|unset)$/.test(verb) ? CONFIG : null;
  // `deployment schedule create|pause|…`: the verb is the third word.
  if (group === "deployment" && verb === "schedule") return SCHEDULE;
  return PREFECT_SCHEDULES.test(verb) ? SCHEDULE : null;
}

/**
 * Dagster: executing or materializing runs the code location's code; wiping assets, runs or
 * schedules deletes their history (Tier 3); starting and stopping schedules and sensors, and
 * backfills, change what runs.
 */
function dagster({ name, args }: RuleInput): Hit | null {
  const [group, verb] = path(args);
  if (name === "dagster-daemon") return group === "wipe" ? RECORDS_GONE : group === "run" ? SERVICE : null;
  if (name !== "dagster") return SERVICE;
  if (verb === "wipe" || verb === "wipe-partitions-status-cache" || (group === "run" && verb === "delete"))
    return RECORDS_GONE;
  if (verb === "execute" || verb === "launch" || verb === "materialize") return SCRIPT;
  if (group === "dev" || group === "code-server" || group === "api") return SERVICE;
  if (group === "instance") return verb === "migrate" || verb === "reindex" ? MIGRATE : null;
  if (group === "run") return verb === "migrate-repository" ? MIGRATE : null;
  return /^(?:start|stop|restart|cursor|backfill)$/.test(verb) ? SCHEDULE : null;
}

const WORKLOAD = hit(2, "container_change");
const CLUSTER = hit(2, "infrastructure_change");
const CLUSTER_GONE = hit(3, "infrastructure_destruction");

/** Nomad's groups and the verbs of theirs that act; `acl`, `operator` and `stop` are judged below. */
const NOMAD: VerbTable = {
  job: Object.fromEntries(
    ["run", "dispatch", "revert", "promote", "scale", "restart", "eval", "action", "start", "periodic"].map(
      (v) => [v, WORKLOAD],
    ),
  ),
  alloc: { exec: WORKLOAD, signal: WORKLOAD, stop: WORKLOAD, restart: WORKLOAD, pause: WORKLOAD },
  node: { drain: WORKLOAD, eligibility: WORKLOAD },
  deployment: { fail: WORKLOAD, pause: WORKLOAD, promote: WORKLOAD, resume: WORKLOAD, unblock: WORKLOAD },
  eval: { delete: WORKLOAD },
  system: { gc: WORKLOAD, reconcile: WORKLOAD },
  service: { delete: WORKLOAD },
  recommendation: { apply: WORKLOAD, dismiss: WORKLOAD },
  namespace: { apply: CLUSTER, delete: CLUSTER_GONE },
  quota: { apply: CLUSTER, delete: CLUSTER },
  volume: { create: CLUSTER, register: CLUSTER, detach: CLUSTER, deregister: CLUSTER, delete: CLUSTER_GONE },
  var: { put: CONFIG, lock: CONFIG, purge: RECORDS_GONE },
  sentinel: { apply: CONFIG, delete: CONFIG },
  license: { put: CONFIG },
  server: { "force-leave": CLUSTER, join: CLUSTER },
};

/** `nomad operator …`: Raft peers and settings changed, a snapshot restored over the live state. */
function nomadOperator(area: string, action: string): Hit | null {
  if (area === "snapshot") return action === "restore" ? RECORDS_GONE : action === "agent" ? SERVICE : null;
  if (area === "raft") return action === "remove-peer" || action === "transfer-leadership" ? CLUSTER : null;
  if (area === "autopilot" || area === "scheduler") return action === "set-config" ? CONFIG : null;
  return (area === "root" || area === "gossip") && action === "keyring" ? CONFIG : null;
}

/**
 * Nomad: `job stop -purge` removes the job and its history from the servers (Tier 3); ACL
 * objects created or updated are Tier 2 and deleted Tier 3 (account_access), as Consul's are.
 */
function nomad({ args }: RuleInput): Hit | null {
  const [group = "", verb = "", third = ""] = wordsOf(args, NOMAD_VALUED);
  if (group === "agent") return SERVICE;
  if (group === "run") return WORKLOAD;
  if ((group === "job" && verb === "stop") || group === "stop")
    return args.has("-purge") ? CLUSTER_GONE : WORKLOAD;
  if (group === "operator") return nomadOperator(verb, third);
  if (group === "acl") {
    if (verb === "bootstrap" || /^(?:create|update|apply)$/.test(third)) return ACCOUNTS;
    return third === "delete" ? hit(3, "account_access") : null;
  }
  // `volume snapshot create|delete`, `node pool apply|delete`, `node meta apply`: the verb is the third word.
  if (group === "volume" && verb === "snapshot")
    return third === "delete" ? CLUSTER_GONE : third === "create" ? CLUSTER : null;
  if (group === "node" && (verb === "pool" || verb === "meta"))
    return /^(?:apply|delete)$/.test(third) ? WORKLOAD : null;
  return verdictOf(NOMAD, group, verb) ?? (/^(?:delete|purge|destroy)$/.test(verb) ? GONE : null);
}

export const SCHEDULER_RULES: [string | string[], Rule][] = [
  ["airflow", judged(airflow)],
  ["dbt", judged(dbt)],
  ["prefect", judged(prefect)],
  [["dagster", "dagster-daemon", "dagster-webserver", "dagit"], judged(dagster)],
  ["nomad", judged(nomad)],
];
