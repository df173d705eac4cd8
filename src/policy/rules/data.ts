import { type Hit, hit, type RuleInput, table } from "./args.js";
import { CONSOLE_ENTRIES } from "./consoles.js";
import { clientFile, influx, redisCommand } from "./data-import.js";

/**
 * Data stores: statements that drop or empty a database are Tier 3
 * (data_store_destruction); statements that write rows, change the schema,
 * grants or server settings, or end sessions are Tier 2 (data_store_change).
 * They are looked for in the text the client runs (`-c`, `-e`, `--eval`,
 * query arguments, here-docs and literal text piped in), and in bare SQL
 * typed as shell text (a multi-line policy text can carry a client's stdin).
 * The consoles of clustered services (etcd, Consul, Vault, RabbitMQ, nodetool)
 * are judged in consoles.ts and registered here.
 * Every regex here is a sequence of literal words, alternations and
 * single-class runs (linear).
 */

/** DROP of anything that holds data, code or logins; `DROP CONSTRAINT`, `DROP DEFAULT` only change a table. */
const DROP =
  /\bdrop\s+(?:(?:temporary|temp|materialized|foreign|external|unlogged|global)\s+)?(?:database|databases|schema|table|tables|keyspace|tablespace|owned|columnfamily|collection|view|sequence|user|role|column|partition|dictionary|measurement|retention|series|shard|stream|index|function|procedure|trigger|type|extension|server|event|login|catalog|stage|warehouse)\b/i;
const TRUNCATE = /\btruncate\s+(?:table\s+)?[\w"`[]/i;
const MONGO = /\.\s*(?:dropdatabase|drop|deletemany|remove|dropallusers|dropuser|dropallroles)\s*\(/i;
const REDIS = /\bflush(?:all|db)\b/i;
/** Server functions that delete: replication slots (the replica's WAL position) and large objects. */
const DESTROYING_CALL = /\b(?:pg_drop_replication_slot|lo_unlink)\s*\(/i;

/** PURGE BINARY LOGS, RESET MASTER, RESET BINARY LOGS AND GTIDS, RESET SLAVE/REPLICA ALL: history that is gone. */
const PURGE_OR_RESET =
  /^(?:purge\s+\w|reset\s+(?:master|binary\s+logs)\b|reset\s+(?:slave|replica)\b.*\ball\b)/;

/** Statements that write: rows, schema, grants, server settings, sessions, replication. */
const WRITE_START =
  /^(?:(?:insert|upsert|merge|alter|create|grant|revoke|reindex|cluster|copy|\\copy|rename|call|exec|execute|optimize|repair|flush|install|uninstall|import|attach|detach|exchange|system|shutdown|restart|reset|undrop)\s+\S|replace\s+into\b|load\s+data\b|lock\s+tables?\b|kill\s+\S|comment\s+on\b|refresh\s+materialized\b|set\s+(?:global|persist|@@global|@@persist)\b|(?:start|stop)\s+(?:slave|replica)\b|change\s+(?:master|replication)\b|begin\s+(?:unlogged\s+)?batch\b|vacuum\b)/;

/** Calls that change the server or end other sessions, anywhere in a statement (`SELECT pg_terminate_backend(pid) …`). */
const WRITE_CALL =
  /\b(?:pg_terminate_backend|pg_cancel_backend|pg_reload_conf|set_config|setval|pg_switch_wal|pg_promote|pg_create_restore_point|pg_create_logical_replication_slot|pg_create_physical_replication_slot|lo_import|lo_export|dblink_exec)\s*\(/i;

/** mongosh methods that write documents, indexes, collections or users. */
const MONGO_WRITE =
  /\.\s*(?:insert|insertone|insertmany|update|updateone|updatemany|replaceone|findoneandupdate|findoneandreplace|findoneanddelete|deleteone|bulkwrite|save|createindex|createindexes|dropindex|dropindexes|createcollection|renamecollection|createuser|updateuser|grantrolestouser|revokerolesfromuser|shutdownserver|fsynclock|stepdown|reconfig|freeze|syncfrom|addarb|killop|adminCommand|runCommand|setprofilinglevel|enablesharding|shardcollection|movechunk|splitat|addshard|removeshard|startbalancer|stopbalancer)\s*\(/i;

/** An aggregation stage that writes its result into a collection. */
const MONGO_STAGE_WRITE = /["']?\$(?:out|merge)["']?\s*:/;

/** `SELECT … INTO OUTFILE` writes a file on the server. */
const INTO_FILE = /\binto\s+(?:outfile|dumpfile)\b/i;

/** `SELECT … INTO t` (PostgreSQL, T-SQL, InfluxQL) creates a table and fills it; `INTO @v` sets a variable. */
const SELECT_INTO = /^(?:select|with)\b.*\binto\s+[^@\s]/s;

/** A WHERE that every row satisfies (`WHERE 1=1`, `WHERE true`) bounds nothing. */
const TRIVIAL_WHERE = /\bwhere\s+(?:1\s*=\s*1|true|1|0\s*=\s*0)\s*(?:$|limit\b|returning\b|order\b)/;

/** A DELETE or UPDATE … SET: unbounded (no WHERE, or one every row meets) it empties or overwrites the table. */
function rowWrite(s: string): Hit | null {
  const del = /\bdelete\s+from\s/.test(s) || /^delete\s+\S/.test(s);
  if (!del && !/^update\s+\S+\s+set\s/.test(s)) return null;
  return !/\bwhere\b/.test(s) || TRIVIAL_WHERE.test(s) ? DESTROY : CHANGE;
}

/** One statement, lower-cased and trimmed. */
function statementHit(s: string): Hit | null {
  if (s === "") return null;
  if (PURGE_OR_RESET.test(s)) return DESTROY;
  const rows = rowWrite(s);
  if (rows !== null) return rows;
  if (WRITE_START.test(s) || SELECT_INTO.test(s.replace(/'(?:[^']|'')*'/g, "''"))) return CHANGE;
  // `WITH x AS (…) INSERT …`: a common table expression in front of a write.
  return /^with\s/.test(s) && /\binsert\s+into\b/.test(s) ? CHANGE : null;
}

/** EXPLAIN (or MySQL's DESCRIBE) of a statement, without ANALYZE: the statement is planned, never run. */
const PLAN_ONLY =
  /^\s*(?:explain|describe|desc)\s+(?:\([^)]*\)\s*)?(?:select|insert|update|delete|replace|merge|with|query\s+plan|format\s*=)/i;

/** The statements of `sql` that run, without the EXPLAINs that only plan theirs. */
function runStatements(sql: string): string {
  return sql
    .split(";")
    .filter((part) => !PLAN_ONLY.test(part) || /\banaly[sz]e\b/i.test(part))
    .join(";");
}

/** What this text (SQL, a mongo script, a redis command line) does to stored data. */
function dataHit(sql: string): Hit | null {
  const text = runStatements(sql);
  if (DROP.test(text) || TRUNCATE.test(text) || MONGO.test(text) || REDIS.test(text)) return DESTROY;
  if (DESTROYING_CALL.test(text)) return DESTROY;
  let found: Hit | null =
    WRITE_CALL.test(text) || MONGO_WRITE.test(text) || MONGO_STAGE_WRITE.test(text) || INTO_FILE.test(text)
      ? CHANGE
      : null;
  for (const part of text.toLowerCase().split(";")) {
    const h = statementHit(part.trim());
    if (h === DESTROY) return DESTROY;
    found ??= h;
  }
  return found;
}

function destroysData(text: string): boolean {
  return dataHit(text) === DESTROY;
}

const DESTROY = hit(3, "data_store_destruction");
const CHANGE = hit(2, "data_store_change");

/** The higher of two verdicts (the first on a tie). */
function higher(a: Hit | null, b: Hit | null): Hit | null {
  if (a === null) return b;
  return b !== null && b.tier > a.tier ? b : a;
}

/** A database client: everything it is told to run is in its arguments or on stdin. */
function client({ name, args, stdin }: RuleInput): Hit | null {
  let found: Hit | null = null;
  for (const v of args.values) {
    const h = dataHit(v);
    if (h === DESTROY) return DESTROY;
    found ??= h;
  }
  if (stdin !== null) {
    const h = dataHit(stdin);
    if (h === DESTROY) return DESTROY;
    found ??= h;
  }
  const own = name.endsWith("-cli")
    ? redisCommand(args, stdin)
    : name === "influx"
      ? influx({ name, path: name, args, stdin })
      : null;
  return higher(higher(own, clientFile(name, args)), found);
}

/** SQL typed as shell text: `DROP TABLE x;` parses as a command named DROP. */
function bareSql({ name, args }: RuleInput): Hit | null {
  return destroysData(`${name} ${args.values.join(" ")}`) ? DESTROY : null;
}

/** mysqladmin: `drop` a database is Tier 3; create, kill, flush, reload, shutdown, password change the server. */
function mysqladmin({ args }: RuleInput): Hit | null {
  if (args.hasLower("drop")) return DESTROY;
  const writes =
    /^(?:create|kill|flush-\w+|reload|refresh|shutdown|password|old-password|start-slave|stop-slave|start-replica|stop-replica|debug)$/;
  return args.operands().some((o) => writes.test(o.toLowerCase())) ? CHANGE : null;
}

/** Database clients: they run whatever SQL (or commands) they are given. */
export const SQL_CLIENTS: ReadonlySet<string> = new Set([
  "psql",
  "mysql",
  "mariadb",
  "sqlite3",
  "sqlite",
  "clickhouse-client",
  "clickhouse",
  "cqlsh",
  "mongo",
  "mongosh",
  "redis-cli",
  "valkey-cli",
  "keydb-cli",
  "sqlcmd",
  "duckdb",
  "cockroach",
  "usql",
  "pgcli",
  "mycli",
  "litecli",
  "isql",
  "bq",
  "snowsql",
  "trino",
  "presto",
  "influx",
  "vsql",
  "db2",
  "sqlplus",
]);

export const DATA_RULES = table([
  [[...SQL_CLIENTS], client],
  [["drop", "delete", "update", "flushall", "flushdb"], bareSql],
  [["dropdb", "dropuser", "dropdatabase"], () => DESTROY],
  ["mysqladmin", mysqladmin],
  ...CONSOLE_ENTRIES,
]);
