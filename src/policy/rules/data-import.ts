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

/** The first `count` subcommand words of a tool, lower-cased, skipping option values named in `valued`. */
export function verbs(args: Args, valued: ReadonlySet<string>, count = 3): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length && out.length < count; i++) {
    const v = args.values[i]!;
    if (valued.has(v)) i++;
    else if (!v.startsWith("-")) out.push(v.toLowerCase());
  }
  return out;
}

/** etcdctl's global options that take a value. */
export const ETCD_VALUED = new Set([
  "--endpoints",
  "--cacert",
  "--cert",
  "--key",
  "--user",
  "-w",
  "--write-out",
]);

/** etcdctl/etcdutl `snapshot restore` replaces a member's data directory with the snapshot's state. */
function etcdSnapshot({ args }: RuleInput): Hit | null {
  const [a, b] = verbs(args, ETCD_VALUED);
  if (a === "snapshot" && b === "restore") return DESTROY;
  if (a === "compact" || a === "compaction") return WRITE;
  return null;
}

/** Flux that writes: `to()` and `wideTo()` into a bucket, `sql.to()`, `http.post()`. */
const FLUX_WRITES = /\b(?:to|wideTo|post)\s*\(/;

/**
 * influx (2.x): `delete` removes points, `bucket delete` a bucket, `stacks remove` the resources a
 * stack installed, `user delete` a login, `restore --full` replaces everything (Tier 3).
 * Creating, updating or deleting the other objects, applying a template and Flux that writes
 * are Tier 2.
 */
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
  if ((is(a, "bucket", "org", "user") && is(b, "delete")) || (a === "stacks" && is(b, "remove", "rm")))
    return DESTROY;
  if (a === "restore") return args.long("full") ? DESTROY : WRITE;
  if (a === "write" || (a === undefined && args.values.some((v) => /^-import$/i.test(v)))) return WRITE;
  if (a === "query") return args.values.some((v) => FLUX_WRITES.test(v)) ? CHANGE : null;
  if (is(a, "apply", "setup")) return CHANGE;
  const changes = ["create", "update", "delete", "rm", "remove", "password", "active", "inactive", "retry"];
  return a !== "config" && is(b, ...changes) ? CHANGE : null;
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
  const opts = Object.hasOwn(FILE_OPTIONS, name) ? FILE_OPTIONS[name] : undefined;
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
    "bgrewriteaof failover json.set json.del",
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
  cluster:
    /^(?:reset|forget|failover|meet|addslots|addslotsrange|delslots|delslotsrange|flushslots|setslot|replicate|saveconfig|bumpepoch|set-config-epoch)$/,
  xgroup: /^(?:create|destroy|delconsumer|setid|createconsumer)$/,
  module: /^(?:load|loadex|unload)$/,
  // The server's own records and memory: the slow log, latency samples, allocator pages.
  slowlog: /^reset$/,
  latency: /^reset$/,
  memory: /^purge$/,
};

/** DEBUG subcommands that only report; the others freeze, crash or reconfigure the server. */
const REDIS_DEBUG_READS =
  /^(?:object|help|digest|digest-value|stringmatch-len|listpack|quicklist-packed-threshold)?$/;

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
  if (cmd === "debug") {
    if (/^(?:reload|flushall|crash-and-recover|segfault)$/.test(sub ?? "")) return DESTROY;
    return REDIS_DEBUG_READS.test(sub ?? "") ? null : CHANGE;
  }
  if (cmd === "restore" || cmd === "migrate" || cmd === "swapdb") return WRITE;
  if ((cmd === "sort" || cmd === "sort_ro") && words.includes("store")) return CHANGE;
  if (cmd === "replicaof" || cmd === "slaveof" || REDIS_WRITES.has(cmd)) return CHANGE;
  const subs = Object.hasOwn(REDIS_SUB_WRITES, cmd) ? REDIS_SUB_WRITES[cmd] : undefined;
  return subs?.test(sub ?? "") ? CHANGE : null;
}

/**
 * `redis-cli --cluster SUBCOMMAND HOST:PORT …`: `call` runs its command on every node, which is
 * judged as that command; creating, growing, shrinking, fixing or resharding a cluster is Tier 2.
 */
function redisCluster(rest: readonly string[]): Hit | null {
  const [sub, , ...command] = rest.map((v) => v.toLowerCase());
  if (sub === "call") return redisLine(command.filter((w) => !w.startsWith("--cluster-")));
  return /^(?:create|add-node|del-node|fix|rebalance|reshard|import|set-timeout)$/.test(sub ?? "")
    ? CHANGE
    : null;
}

/** redis-cli: the command in the arguments, or each line of literal stdin when none is given. */
export function redisCommand(args: Args, stdin: string | null = null): Hit | null {
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (words.length === 0 && REDIS_VALUED.has(v)) {
      if (v === "--cluster") return redisCluster(args.values.slice(i + 1));
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

export const DATA_IMPORT_RULES = table([
  ["pg_restore", pgRestore],
  ["mongorestore", mongorestore],
  ["mongoimport", mongoimport],
  ["mysqlimport", mysqlimport],
  [["etcdutl"], etcdSnapshot],
  [["pg_dropcluster", "pg_resetwal", "pg_resetxlog"], () => DESTROY],
]);

export { etcdSnapshot, influx };
