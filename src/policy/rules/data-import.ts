import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Restoring and importing into data stores. A restore or import that drops or
 * replaces what is there first (`pg_restore --clean`, `mongorestore --drop`,
 * `mysqlimport --delete`, `influx restore --full`, `etcdctl snapshot
 * restore`) is Tier 3 (data_store_destruction); one that only adds or
 * overwrites rows is Tier 2; listing an archive or writing SQL to a file reads.
 * A script or dump handed to a client (`psql -f dump.sql`, `mysql db <
 * dump.sql`, `sqlite3 db .read x.sql`) runs statements nobody can see here:
 * Tier 2.
 */

const DESTROY = hit(3, "data_store_destruction");
const is = (word: string | undefined, ...names: string[]): boolean =>
  word !== undefined && names.includes(word);
const WRITE = hit(2, "data_store_destruction");
const CHANGE = hit(2, "data_store_change");

/** pg_restore writes a database only with -d/--dbname; otherwise it prints SQL (or a listing with -l). */
function pgRestore({ args }: RuleInput): Hit | null {
  const target = args.optionValue("-d", "--dbname");
  if (target === undefined || args.short("l") || args.long("list")) return null;
  return args.short("c") || args.long("clean") ? DESTROY : WRITE;
}

function mongorestore({ args }: RuleInput): Hit | null {
  return args.long("drop") ? DESTROY : WRITE;
}

/** mongoimport: --drop empties the collection first; --mode=delete deletes the matching documents. */
function mongoimport({ args }: RuleInput): Hit | null {
  if (args.long("drop") || /^delete$/i.test(args.optionValue("--mode") ?? "")) return DESTROY;
  return WRITE;
}

/** mysqlimport -d/--delete empties each table before loading it. */
function mysqlimport({ args }: RuleInput): Hit | null {
  return args.short("d") || args.long("delete") ? DESTROY : WRITE;
}

/** The subcommand words of a tool, skipping option values named in `valued`. */
function verbs(args: Args, valued: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length && out.length < 3; i++) {
    const v = args.values[i]!;
    if (valued.has(v)) i++;
    else if (!v.startsWith("-")) out.push(v.toLowerCase());
  }
  return out;
}

const ETCD_VALUED = new Set(["--endpoints", "--cacert", "--cert", "--key", "--user", "-w", "--write-out"]);

/** etcdctl/etcdutl `snapshot restore` replaces a member's data directory with the snapshot's state. */
function etcdSnapshot({ args }: RuleInput): Hit | null {
  const [a, b] = verbs(args, ETCD_VALUED);
  if (a === "snapshot" && b === "restore") return DESTROY;
  if (a === "compact" || a === "compaction") return WRITE;
  return null;
}

/** influx (2.x): `delete` removes points, `bucket delete` a bucket, `restore --full` replaces everything. */
function influx({ args }: RuleInput): Hit | null {
  const [a, b] = verbs(
    args,
    new Set([
      "--host",
      "-t",
      "--token",
      "-o",
      "--org",
      "-b",
      "--bucket",
      "--start",
      "--stop",
      "--predicate",
      "-c",
      "--configs-path",
      "--active-config",
    ]),
  );
  if (a === "delete") return DESTROY;
  if (is(a, "bucket", "org", "v1") && is(b, "delete")) return DESTROY;
  if (a === "restore") return args.long("full") ? DESTROY : WRITE;
  if (a === "write" || (a === undefined && args.values.some((v) => /^-import$/i.test(v)))) return WRITE;
  return null;
}

/**
 * Client options whose value is a file of statements the client runs, and
 * in-client commands that read one (`\i`, `source`, `.read`); `.restore`
 * replaces the whole database.
 */
const FILE_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  psql: ["-f", "--file"],
  cqlsh: ["-f", "--file"],
  sqlcmd: ["-i", "--input-file"],
  "clickhouse-client": ["--queries-file"],
  clickhouse: ["--queries-file"],
  mongosh: ["-f", "--file"],
  mongo: ["-f", "--file"],
  snowsql: ["-f", "--filename"],
  trino: ["-f", "--file"],
  presto: ["-f", "--file"],
  usql: ["-f", "--file"],
  vsql: ["-f"],
  duckdb: ["-f", "-init"],
  influx: ["-import", "-path"],
  db2: ["-f", "-tvf", "-tf"],
};

const RUNS_FILE = /(?:^|;)\s*(?:\\i|\\ir|\\include|source|\\\.|\.read|\.import)\s+\S/i;

/** Does a client run statements from a file this call does not show? `.restore` is a full replace. */
export function clientFile(name: string, args: Args): Hit | null {
  if (args.values.some((v) => /(?:^|;)\s*\.restore\s/.test(v))) return DESTROY;
  const opts = FILE_OPTIONS[name];
  if (opts?.some((o) => args.optionValue(o) !== undefined)) return WRITE;
  if (args.values.some((v) => RUNS_FILE.test(v))) return WRITE;
  // sqlplus @script, mongosh script.js
  const ops = args.operands();
  if (name === "sqlplus" && ops.some((o) => o.startsWith("@"))) return WRITE;
  if ((name === "mongosh" || name === "mongo") && ops.some((o) => /\.js$/i.test(o))) return WRITE;
  return null;
}

/** redis-cli options that take a value; the first other word is the command. */
const REDIS_VALUED = new Set([
  "-h",
  "-p",
  "-s",
  "-a",
  "-u",
  "-n",
  "-r",
  "-i",
  "-d",
  "-D",
  "-t",
  "--user",
  "--pass",
  "--cacert",
  "--cacertdir",
  "--cert",
  "--key",
  "--tls-ciphers",
  "--tls-ciphersuites",
  "--sni",
  "--pattern",
  "--quoted-pattern",
  "--count",
  "--rdb",
  "--functions-rdb",
  "--memkeys-samples",
  "--intrinsic-latency",
  "--pipe-timeout",
  "--cluster",
]);

/** Commands that write keys, sessions, scripts or replication state (Tier 2). */
const REDIS_WRITES = new Set(
  [
    "set setex psetex setnx mset msetnx getset getdel getex append incr incrby incrbyfloat decr decrby",
    "expire pexpire expireat pexpireat persist rename renamenx move copy hset hsetnx hmset hdel hincrby",
    "hincrbyfloat lpush rpush lpushx rpushx lpop rpop lrem lset ltrim linsert lmove blmove rpoplpush",
    "sadd srem spop smove sinterstore sunionstore sdiffstore zadd zrem zincrby zremrangebyscore",
    "zremrangebyrank zremrangebylex zpopmin zpopmax zunionstore zinterstore zrangestore xadd xdel xtrim",
    "xack xclaim xautoclaim pfadd pfmerge geoadd publish spublish eval evalsha fcall bgsave save",
    "bgrewriteaof failover module json.set json.del",
  ]
    .join(" ")
    .split(" "),
);

/** Commands whose second word decides: writes only with these subcommands. */
const REDIS_SUB_WRITES: Readonly<Record<string, RegExp>> = {
  config: /^(?:set|rewrite|resetstat)$/,
  client: /^(?:kill|pause|no-evict|no-touch)$/,
  acl: /^(?:setuser|deluser|load|save|dryrun)$/,
  script: /^(?:load|flush|kill)$/,
  function: /^(?:load|restore|kill)$/,
  cluster: /^(?:reset|forget|failover|meet|addslots|delslots|flushslots|setslot|replicate)$/,
  xgroup: /^(?:create|destroy|delconsumer|setid|createconsumer)$/,
};

/**
 * One redis command line, as words. DEL/UNLINK delete the keys they name, FLUSHALL/FLUSHDB
 * every key, FUNCTION FLUSH/DELETE stored code and REPLICAOF a host discards the whole data set
 * (Tier 3); RESTORE, MIGRATE and SWAPDB replace keys; writes and server changes are Tier 2.
 */
function redisLine(words: readonly string[]): Hit | null {
  const [cmd, sub] = words;
  if (cmd === undefined) return null;
  if (cmd === "del" || cmd === "unlink" || cmd === "flushall" || cmd === "flushdb") return DESTROY;
  if (cmd === "function" && (sub === "flush" || sub === "delete")) return DESTROY;
  if ((cmd === "replicaof" || cmd === "slaveof") && sub !== undefined && sub !== "no") return DESTROY;
  if (cmd === "shutdown") return words.includes("nosave") ? DESTROY : WRITE;
  if (cmd === "debug")
    return /^(?:reload|flushall|crash-and-recover|segfault)$/.test(sub ?? "") ? DESTROY : null;
  if (cmd === "restore" || cmd === "migrate" || cmd === "swapdb") return WRITE;
  if (cmd === "replicaof" || cmd === "slaveof" || REDIS_WRITES.has(cmd)) return CHANGE;
  const subs = REDIS_SUB_WRITES[cmd];
  return subs?.test(sub ?? "") ? CHANGE : null;
}

/** redis-cli: the command in the arguments, or each line of literal stdin when none is given. */
export function redisCommand(args: Args, stdin: string | null = null): Hit | null {
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (words.length === 0 && REDIS_VALUED.has(v)) {
      if (v === "--cluster")
        return /^(?:del-node|fix|rebalance|reshard|import)$/i.test(args.values[i + 1] ?? "") ? CHANGE : null;
      i++;
    } else if (words.length === 0 && v === "--eval") {
      return CHANGE;
    } else if (words.length > 0 || !v.startsWith("-")) {
      words.push(v.toLowerCase());
    }
  }
  if (words.length > 0 || stdin === null) return redisLine(words);
  let found: Hit | null = null;
  for (const line of stdin.split("\n")) {
    const h = redisLine(line.trim().toLowerCase().split(/\s+/));
    if (h !== null && (found === null || h.tier > found.tier)) found = h;
  }
  return found;
}

const VAULT_VALUED = new Set(["-address", "--address", "-namespace", "--namespace", "-mount", "--mount"]);

/**
 * HashiCorp Vault. Destroying secret versions (`kv destroy`), their metadata
 * and every version (`kv metadata delete`), disabling a secrets engine (every
 * secret under its path goes), deleting a path and disabling an auth method
 * (every login through it) cannot be undone: Tier 3. A kv v2 `kv delete` is a
 * soft delete that `kv undelete` restores; writes, enables and policy changes
 * are Tier 2.
 */
function vault({ args }: RuleInput): Hit | null {
  const [a, b, c] = verbs(args, VAULT_VALUED);
  if (a === "kv" && (b === "destroy" || (b === "metadata" && c === "delete"))) return DESTROY;
  if (a === "secrets" && b === "disable") return DESTROY;
  if (a === "delete") return DESTROY;
  if (a === "auth" && b === "disable") return hit(3, "account_access");
  if (a === "kv" && is(b, "put", "patch", "delete", "undelete", "rollback")) return CHANGE;
  if (a === "kv" && b === "metadata" && is(c, "put", "patch")) return CHANGE;
  if (is(a, "write", "patch")) return CHANGE;
  if (
    is(a, "secrets", "auth", "policy", "audit") &&
    is(b, "enable", "tune", "move", "write", "delete", "disable")
  )
    return CHANGE;
  return null;
}

export const DATA_IMPORT_RULES = table([
  ["pg_restore", pgRestore],
  ["mongorestore", mongorestore],
  ["mongoimport", mongoimport],
  ["mysqlimport", mysqlimport],
  [["etcdutl"], etcdSnapshot],
  [["pg_dropcluster", "pg_resetwal", "pg_resetxlog"], () => DESTROY],
  ["vault", vault],
]);

export { etcdSnapshot, influx };
