import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";
import { sqlArgReadsOnly, sqlcmdReadsOnly } from "./sql.js";

/**
 * Query clients of other databases, proven like psql and mysql: the statement given on the
 * command line is read by sql.ts, and a client without one reads its statements from stdin or a
 * terminal and is not proven. Options that run a file of statements, keep a prompt open, start
 * a pager or point the client at another configuration are refused. programs-data.ts adds these
 * entries to its part of the table.
 */

const { entries, spec } = tablePart();

// Cassandra: CQL given with -e. SOURCE, CAPTURE and COPY … TO are not reading verbs there either.
spec("cqlsh", {
  deny: ["-f", "--file", "--cqlshrc", "--credentials", "--browser"],
  check: (args) => sqlArgReadsOnly(args, ["-e", "--execute"]),
});

// ClickHouse: -q/--query (several statements with --multiquery). `clickhouse client` is the same client.
const CLICKHOUSE_CLIENT: ReadSpec = {
  deny: [
    "--queries-file",
    "-C",
    "--config-file",
    "--config",
    "--pager",
    "--interactive",
    "--server_logs_file",
    "--history_file",
  ],
  check: (args) => sqlArgReadsOnly(args, ["-q", "--query"]),
};
spec("clickhouse-client", CLICKHOUSE_CLIENT);
spec("clickhouse", { bare: false, subs: { client: CLICKHOUSE_CLIENT } });

/**
 * sqlcmd runs the -Q query and exits; -q runs it and then waits at a prompt for more, -i runs a
 * file, -o writes one and -z/-Z change the login's password. In the text, `$(name)` is replaced
 * from sqlcmd's variables and the environment, and lines starting with `:` or `!!` are sqlcmd's
 * own commands (`:r FILE`, `:out FILE`, `!! cmd`): sql.ts refuses both.
 */
spec("sqlcmd", {
  deny: ["-i", "-o", "-q", "-z", "-Z"],
  valuedLetters: "SdUPHQtlhswacmVfvyYK",
  check: sqlcmdReadsOnly,
});

/**
 * influx: the 2.x CLI's listing subcommands, and the 1.x CLI's InfluxQL given with -execute.
 * `influx query` runs Flux, which can write with `to()`, and is not proven; `influx config NAME`
 * switches the active configuration.
 */
const LISTS = subsOf(["list", "ls", "find"]);
spec("influx", {
  valued: [
    "--host",
    "-t",
    "--token",
    "-o",
    "--org",
    "--org-id",
    "-c",
    "--active-config",
    "-host",
    "-port",
    "-username",
    "-password",
    "-database",
    "-precision",
    "-format",
    "-execute",
    "-socket",
  ],
  deny: ["--configs-path", "-import", "-path", "-type"],
  subs: {
    bucket: { subs: LISTS },
    org: { subs: { ...LISTS, members: { subs: LISTS } } },
    auth: { subs: LISTS },
    user: { subs: LISTS },
    task: { subs: { ...LISTS, log: { subs: LISTS }, run: { subs: LISTS } } },
    secret: { subs: LISTS },
    v1: { subs: { auth: { subs: LISTS }, dbrp: { subs: LISTS } } },
    config: { subs: LISTS },
    scripts: { subs: LISTS },
    remote: { subs: LISTS },
    replication: { subs: LISTS },
    stacks: { subs: {} },
    telegrafs: { subs: {} },
    "server-config": true,
    ping: true,
    version: true,
  },
  check: (args) => sqlArgReadsOnly(args, ["-execute"]),
});

/**
 * DuckDB: SQL given with -c (or -s), or as the operand after the database. A database file is
 * opened for writing, created when missing, and its write-ahead log checkpointed on exit, so a
 * database operand is proven only with -readonly; without one the database is in memory.
 */
const DUCKDB_VALUED = ["-c", "-s", "-cmd", "-init", "-f", "-newline", "-nullvalue", "-separator"];
spec("duckdb", {
  words: true,
  deny: ["-cmd", "-init", "-f", "-interactive", "-unsigned", "-ui", "-storage-version"],
  check: (args) => {
    const ops = operands(args, DUCKDB_VALUED);
    const db = ops[0]?.value;
    const inMemory = db === undefined || db === ":memory:" || args.some((w) => w.value === "-readonly");
    const given: Word[] = args.filter((_, i) => i > 0 && /^-[cs]$/.test(args[i - 1]!.value));
    const statements = [...given, ...ops.slice(1)];
    return inMemory && ops.length <= 2 && statements.length > 0 && sqlArgReadsOnly(statements, []);
  },
});

// Trino and Presto: --execute; -f runs a file.
const TRINO: ReadSpec = {
  deny: ["-f", "--file", "--pager", "--history-file", "--external-authentication"],
  check: (args) => sqlArgReadsOnly(args, ["--execute"]),
};
spec("trino", TRINO);
spec("presto", TRINO);

// CockroachDB's SQL shell (-e) and its node listings; usql (-c), which takes psql's meta-commands.
spec("cockroach", {
  deny: ["-f", "--file"],
  bare: false,
  subs: {
    sql: { check: (args) => sqlArgReadsOnly(args, ["-e", "--execute"]) },
    node: { subs: subsOf(["status", "ls"]) },
    version: true,
  },
});
spec("usql", {
  deny: ["-f", "--file", "-o", "--out"],
  check: (args) => sqlArgReadsOnly(args, ["-c", "--command"]),
});

export const QUERY_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
