import type { Word } from "../shell/words.js";

/**
 * Database statements given on the command line, read for their writes. A
 * statement is proven when it starts with a reading verb and names no
 * writing keyword or function anywhere (a data-modifying CTE, `SELECT …
 * INTO`, `COPY … TO PROGRAM`, a backend signal); an EXPLAIN without ANALYZE
 * only plans, so the statement it names may be one that writes. Meta-commands of psql are
 * allowed only when they describe or format. The same proof serves every client given SQL, CQL,
 * InfluxQL or T-SQL on its command line; functions that hand a statement to another server
 * (`OPENQUERY`, `system.query`, `postgres_execute`) or run a program (`executable`) are refused.
 */

const READ_START = /^(?:select|show|explain|describe|desc|with|table|values|list|pragma|\\[a-z])/i;
const WRITES =
  /\b(?:insert|update|delete|merge|upsert|replace|drop|truncate|alter|create|grant|revoke|copy|into|call|do|lock|vacuum|analyze|reindex|cluster|notify|load|attach|detach|set|reset|begin|commit|rollback|savepoint|prepare|execute|deallocate|discard|refresh|import|comment|security|checkpoint|kill|flush|purge|install|uninstall|shutdown|handler|rename|optimize|repair|backup|restore)\b/i;
const WRITE_FUNCTIONS =
  /\b(?:pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|pg_switch_wal|pg_create_\w+|pg_drop_\w+|pg_replication_origin_\w+|pg_promote|pg_advisory\w*|pg_file_write|pg_file_unlink|lo_\w+|set_config|nextval|setval|dblink\w*|pg_logical_emit_message|pg_stat_reset\w*|pg_stat_statements_reset|sys_exec|sys_eval|xp_cmdshell|load_file|sleep|benchmark|get_lock|release_lock|txid_current|pg_current_xact_id|pg_import_system_collations|pg_wal_replay_\w+|pg_backup_\w+|pg_start_backup|pg_stop_backup|pg_sleep\w*|load_extension|writefile|edit|fts3_tokenizer|openquery|openrowset|opendatasource|executable|query|raw_query|(?:postgres|mysql)_(?:query|execute))\s*\(/i;
/** T-SQL's `NEXT VALUE FOR seq` advances the sequence, as `nextval` does. */
const SEQUENCE_STEP = /\bnext\s+value\s+for\b/i;

/**
 * SQLite and DuckDB pragmas that report. A pragma given a value (`= x`, or `(x)` for a setting)
 * changes the setting, and some act when named alone (`optimize`, `wal_checkpoint`,
 * `incremental_vacuum`, `create_fts_index`), so only these are proven.
 */
const PRAGMA_QUERIES = new Set(
  [
    "application_id auto_vacuum busy_timeout cache_size collation_list compile_options data_version",
    "database_list encoding foreign_keys freelist_count function_list journal_mode journal_size_limit",
    "locking_mode max_page_count mmap_size module_list page_count page_size pragma_list query_only",
    "schema_version synchronous table_list temp_store user_version wal_autocheckpoint show_tables",
    "show_tables_expanded show_databases database_size version platform metadata_info functions collations",
  ]
    .join(" ")
    .split(" "),
);
/** Pragmas whose argument names what they report on (a table, an index, a row limit). */
const PRAGMA_OF = new Set(
  "table_info table_xinfo index_list index_info index_xinfo foreign_key_list foreign_key_check integrity_check quick_check storage_info show".split(
    " ",
  ),
);

function pragmaReads(text: string): boolean {
  const m = /^pragma\s+(?:\w+\.)?(\w+)\s*(\(\s*[\w"'`. ]*\))?\s*$/i.exec(text);
  if (m === null) return false;
  const name = m[1]!.toLowerCase();
  return PRAGMA_OF.has(name) || (m[2] === undefined && PRAGMA_QUERIES.has(name));
}

/** psql meta-commands that describe or format; \! \o \w \copy \g \gexec \i \e and the rest are not proven. */
const PSQL_META =
  /^\\(?:d[a-zA-Z+]*|l\+?|list|x|conninfo|timing|t|a|H|z|sf\+?|sv\+?|encoding|pset|echo|qecho|dconfig|errverbose|q)(?:\s|$)/;

/** Statements split at `;` outside quotes; null when a quote is left open. */
function statements(sql: string): string[] | null {
  const out: string[] = [];
  let start = 0;
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (quote !== null) {
      if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"' || c === "`") quote = c;
    else if (c === ";") {
      out.push(sql.slice(start, i));
      start = i + 1;
    }
  }
  if (quote !== null) return null;
  out.push(sql.slice(start));
  return out.map((s) => s.trim()).filter((s) => s !== "");
}

/** Text with quoted literals blanked: a keyword inside a string is data. */
function unquoted(sql: string): string {
  return sql.replace(/'(?:[^']|'')*'/g, "''").replace(/"[^"]*"/g, '""');
}

/** True when every statement of `sql` only reads. */
function sqlReadsOnly(sql: string): boolean {
  const list = statements(sql);
  if (list === null || list.length === 0) return false;
  return list.every((st) => {
    if (st.startsWith("\\"))
      return PSQL_META.test(st) && !/\\(?:!|o|w|g|copy|i|e|gexec|gset|set|cd|s\b)/.test(st.slice(1));
    if (st.startsWith("."))
      return /^\.(?:tables|schema|indexes|indices|databases|dbinfo|show|headers|mode|width|stats|timer|fullschema|help)\b[^|]*$/.test(
        st,
      );
    const text = unquoted(st);
    if (!READ_START.test(text) || SEQUENCE_STEP.test(text)) return false;
    if (/^pragma\b/i.test(text)) return pragmaReads(text);
    if (
      /^explain\b/i.test(text) ||
      /^(?:describe|desc)\s+(?:select|insert|update|delete|replace)\b/i.test(text)
    ) {
      // EXPLAIN only plans the statement it names, whatever that statement would write; with
      // ANALYZE (or ANALYSE) it runs it.
      return !/\banaly[sz]e\b/i.test(text) && !WRITE_FUNCTIONS.test(text);
    }
    // `SHOW CREATE TABLE t` prints the statement that would create t.
    const rest = text.replace(/^(?:describe|desc|show(?:\s+create)?)\b/i, "");
    return !WRITES.test(rest) && !WRITE_FUNCTIONS.test(text);
  });
}

/** The statement given with one of `flags` (`-e SQL`, `--execute=SQL`), or the words given; all must read. */
export function sqlArgReadsOnly(args: readonly Word[], flags: readonly string[]): boolean {
  const texts: Word[] = [];
  if (flags.length === 0) texts.push(...args);
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    const shortFlag = flags.find((f) => !f.startsWith("--"));
    const cluster =
      shortFlag !== undefined &&
      v.length > 2 &&
      v.startsWith("-") &&
      !v.startsWith("--") &&
      v.endsWith(shortFlag.slice(1)) &&
      /^-[A-Za-z]+$/.test(v);
    if (flags.includes(v) || cluster) {
      const s = args[i + 1];
      if (s === undefined) return false;
      texts.push(s);
      i++;
    } else {
      for (const f of flags) {
        if (f.startsWith("--") && v.startsWith(`${f}=`))
          texts.push({ ...args[i]!, value: v.slice(f.length + 1) });
        else if (!f.startsWith("--") && v.startsWith(f) && v.length > f.length && !v.startsWith("--"))
          texts.push({ ...args[i]!, value: v.slice(f.length) });
      }
    }
  }
  // Without a statement the client reads its statements from stdin or a terminal: not proven.
  return texts.length > 0 && texts.every((w) => !w.dynamic && sqlReadsOnly(w.value));
}

/** sqlcmd's -Q query, without the variables it substitutes and the commands it runs (`:r`, `!!`). */
export function sqlcmdReadsOnly(args: readonly Word[]): boolean {
  return sqlArgReadsOnly(args, ["-Q"]) && args.every((w) => !/\$\(|^\s*(?::|!!)/m.test(w.value));
}

/** psql: every -c statement reads; a psql without -c reads statements from elsewhere. */
export function psqlReadsOnly(args: readonly Word[]): boolean {
  if (args.some((w) => /^(?:-l|--list|-V|--version)$/.test(w.value))) return true;
  return sqlArgReadsOnly(args, ["-c", "--command"]);
}

/** redis-cli commands that only read (and the client's own reporting modes). */
const REDIS_READS = new Set(
  "info ping echo get mget exists ttl pttl type keys scan hget hgetall hkeys hvals hlen hmget hexists hscan hstrlen llen lrange lindex lpos scard smembers sismember smismember srandmember sscan zcard zrange zrangebyscore zrevrange zrevrangebyscore zscore zrank zrevrank zscan zcount zlexcount strlen getrange dbsize time lastsave role xlen xrange xrevrange xinfo xpending pfcount bitcount bitpos getbit geopos geodist geohash georadius_ro geosearch object dump randomkey substr exists".split(
    " ",
  ),
);
const REDIS_SUB_READS: Readonly<Record<string, RegExp>> = {
  client: /^(?:list|info|getname|id|trackinginfo)$/i,
  config: /^get$/i,
  slowlog: /^(?:get|len)$/i,
  memory: /^(?:usage|stats|doctor|malloc-stats)$/i,
  latency: /^(?:latest|doctor|history|graph|histogram)$/i,
  cluster: /^(?:info|nodes|slots|shards|myid|keyslot|countkeysinslot|getkeysinslot|links)$/i,
  command: /^(?:count|info|docs|list|getkeys)$/i,
  pubsub: /^(?:channels|numsub|numpat|shardchannels)$/i,
  acl: /^(?:whoami|list|users|cat|getuser)$/i,
  module: /^list$/i,
  function: /^(?:list|stats|dump)$/i,
  script: /^exists$/i,
  xinfo: /^(?:stream|groups|consumers)$/i,
};
export const REDIS_VALUED = [
  "-h",
  "-p",
  "-a",
  "-n",
  "-u",
  "--user",
  "--pass",
  "-s",
  "-r",
  "-i",
  "--cacert",
  "--cert",
  "--key",
  "--sni",
];
const REDIS_MODES =
  /^--(?:stat|bigkeys|memkeys|hotkeys|latency|latency-history|latency-dist|scan|intrinsic-latency)$/;

export function redisReadsOnly(args: readonly Word[]): boolean {
  // `--cluster check|info` report on the cluster; its other commands (fix, reshard, call …) act.
  const cluster = args.findIndex((w) => w.value === "--cluster");
  if (cluster >= 0) {
    const command = args[cluster + 1];
    return command !== undefined && !command.dynamic && /^(?:check|info)$/i.test(command.value);
  }
  if (args.some((w) => REDIS_MODES.test(w.value))) return true;
  const ops: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args[i]!.value;
    if (REDIS_VALUED.includes(v)) {
      i++;
      continue;
    }
    if (ops.length === 0 && v.startsWith("-")) continue;
    ops.push(args[i]!);
  }
  const first = ops[0];
  if (first === undefined || first.dynamic) return false;
  const cmd = first.value.toLowerCase();
  if (REDIS_READS.has(cmd)) return true;
  const sub = Object.hasOwn(REDIS_SUB_READS, cmd) ? REDIS_SUB_READS[cmd] : undefined;
  const next = ops[1];
  return sub !== undefined && next !== undefined && !next.dynamic && sub.test(next.value);
}
