import { type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Data stores: statements that drop or empty a database are Tier 3. They are
 * looked for in the text the client runs (`-c`, `-e`, `--eval`, query
 * arguments, here-docs and literal text piped in), and in bare SQL typed as
 * shell text (a multi-line policy text can carry a client's stdin).
 */

const DROP = /\bdrop\s+(?:database|schema|table|keyspace|tablespace|owned|columnfamily|collection)\b/i;
const TRUNCATE = /\btruncate\s+(?:table\s+)?[\w"`[]/i;
const MONGO = /\.\s*(?:dropdatabase|drop|deletemany|remove)\s*\(/i;
const REDIS = /\bflush(?:all|db)\b/i;

/**
 * DELETE/UPDATE without WHERE empty or overwrite a whole table. Statements are
 * split on `;`, so each check sees one statement; all regexes here are a
 * sequence of literal words and single-class runs (linear).
 */
function unboundedWrite(statement: string): boolean {
  const s = statement.toLowerCase();
  if (/\bdelete\s+from\s/.test(s) || /^\s*delete\s+\S/.test(s)) return !/\bwhere\b/.test(s);
  if (/^\s*update\s+\S+\s+set\s/.test(s)) return !/\bwhere\b/.test(s);
  return false;
}

/** Does this text (SQL, a mongo script, a redis command line) destroy stored data? */
function destroysData(text: string): boolean {
  if (DROP.test(text) || TRUNCATE.test(text) || MONGO.test(text) || REDIS.test(text)) return true;
  if (!/delete|update/i.test(text)) return false;
  return text.split(";").some(unboundedWrite);
}

const DESTROY = hit(3, "data_store_destruction");

/** A database client: everything it is told to run is in its arguments or on stdin. */
function client({ args, stdin }: RuleInput): Hit | null {
  if (args.values.some((v) => destroysData(v))) return DESTROY;
  if (stdin !== null && destroysData(stdin)) return DESTROY;
  return null;
}

/** SQL typed as shell text: `DROP TABLE x;` parses as a command named DROP. */
function bareSql({ name, args }: RuleInput): Hit | null {
  return destroysData(`${name} ${args.values.join(" ")}`) ? DESTROY : null;
}

function mysqladmin({ args }: RuleInput): Hit | null {
  return args.hasLower("drop") ? DESTROY : null;
}

function etcdctl({ args }: RuleInput): Hit | null {
  if (args.lower(0) !== "del") return null;
  return args.long("prefix") || args.long("from-key") ? DESTROY : hit(2, "data_store_destruction");
}

export const DATA_RULES = table([
  [
    [
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
    ],
    client,
  ],
  [["drop", "delete", "update", "flushall", "flushdb"], bareSql],
  [["dropdb", "dropuser", "dropdatabase"], () => DESTROY],
  ["mysqladmin", mysqladmin],
  ["etcdctl", etcdctl],
]);
