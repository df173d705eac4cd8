import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/**
 * A throwaway PostgreSQL cluster for the shared-state suites (Debian's postgresql-15): its own
 * data directory and socket directory owned by `postgres`, listening on 127.0.0.1 at a free port,
 * never the system's cluster. One per test file; suites that need isolation take a database each.
 */

const BIN = "/usr/lib/postgresql/15/bin";
const INITDB = join(BIN, "initdb");
const PG_CTL = join(BIN, "pg_ctl");
const PSQL = join(BIN, "psql");
const RUNUSER = "/usr/sbin/runuser";
/** The role the relay connects as; the superuser `postgres` is reached over the socket only. */
const ROLE = "relay";

const run = promisify(execFile);

/** Why the PostgreSQL suites cannot run here, or null when they can. */
export const POSTGRES_SKIP_REASON: string | null = !existsSync(INITDB)
  ? `${INITDB} is not installed (apt-get install postgresql-15)`
  : process.geteuid?.() !== 0
    ? "the PostgreSQL suites start a cluster as the postgres account: run as root"
    : !existsSync(RUNUSER)
      ? `${RUNUSER} is not installed (util-linux)`
      : null;

export interface PostgresCluster {
  /** `postgres://relay:PASSWORD@127.0.0.1:PORT/relay`: the relay's own role and database. */
  url: string;
  host: string;
  port: number;
  password: string;
  /** Stop the server and remove the data, the socket and the log. */
  stop(): Promise<void>;
  /** Stop and start again: same port, same data. */
  restart(): Promise<void>;
  /** Stop the server (fast shutdown: connections are cut), keeping its data and port. */
  stopServer(): Promise<void>;
  /** Start a server stopped by stopServer again. */
  startServer(): Promise<void>;
  /** Run SQL as the superuser in the relay's database (or `database`); stdout, unaligned, tuples only. */
  psql(sql: string, database?: string): Promise<string>;
  /** A new empty database owned by the relay's role; its URL. */
  createDatabase(name: string): Promise<string>;
}

/** A port nothing listens on now (the kernel's pick). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function asPostgres(program: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(RUNUSER, ["-u", "postgres", "--", program, ...args], { maxBuffer: 16 * 1024 * 1024 });
}

/** Where a failed step's output goes: the command's stderr and the server's log, for the test report. */
function explain(step: string, err: unknown, log: string): Error {
  const stderr = typeof err === "object" && err !== null && "stderr" in err ? String(err.stderr) : "";
  const tail = existsSync(log) ? ` (server log: ${log})` : "";
  return new Error(`${step} failed: ${stderr.trim() || String(err)}${tail}`);
}

/** A database name the fixture accepts: lowercase letters, digits and underscores. */
function checkName(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a database name: ${name}`);
  return name;
}

/** initdb, configure, start, and create the relay's role and database. */
export async function startPostgres(): Promise<PostgresCluster> {
  if (POSTGRES_SKIP_REASON !== null) throw new Error(POSTGRES_SKIP_REASON);
  const root = mkdtempSync(join(tmpdir(), "relay-pg-"));
  const data = join(root, "data");
  const sockets = join(root, "sock");
  const log = join(root, "server.log");
  mkdirSync(sockets);
  const { uid, gid } = postgresAccount();
  for (const path of [root, sockets]) chownSync(path, uid, gid);
  const host = "127.0.0.1";
  const password = randomBytes(16).toString("hex");
  let port = 0;
  try {
    await asPostgres(INITDB, [
      "-D",
      data,
      "-U",
      "postgres",
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
    ]);
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw explain("initdb", err, log);
  }
  const startServer = async (): Promise<void> => {
    try {
      await asPostgres(PG_CTL, ["-D", data, "-l", log, "-w", "-t", "60", "start"]);
    } catch (err) {
      throw explain("pg_ctl start", err, log);
    }
  };
  const stopServer = async (): Promise<void> => {
    try {
      await asPostgres(PG_CTL, ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"]);
    } catch (err) {
      throw explain("pg_ctl stop", err, log);
    }
  };
  const psql = async (sql: string, database = ROLE): Promise<string> => {
    const args = ["-h", sockets, "-p", String(port), "-U", "postgres", "-d", database];
    try {
      const { stdout } = await run(PSQL, [
        ...args,
        "-X",
        "-q",
        "-A",
        "-t",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        sql,
      ]);
      return stdout.trim();
    } catch (err) {
      throw explain(`psql -c ${JSON.stringify(sql)}`, err, log);
    }
  };
  const urlOf = (database: string): string =>
    `postgres://${ROLE}:${password}@${host}:${port}/${encodeURIComponent(database)}`;

  // A port picked now can be taken before the server binds it: pick again a few times.
  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    const settings = [
      "",
      "listen_addresses = '127.0.0.1'",
      `port = ${port}`,
      `unix_socket_directories = '${sockets}'`,
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "max_connections = 200",
      "",
    ];
    appendFileSync(join(data, "postgresql.conf"), settings.join("\n"));
    try {
      await startServer();
      break;
    } catch (err) {
      if (attempt >= 3) {
        rmSync(root, { recursive: true, force: true });
        throw err;
      }
    }
  }
  try {
    await psql(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${password}'`, "postgres");
    await psql(`CREATE DATABASE ${ROLE} OWNER ${ROLE}`, "postgres");
  } catch (err) {
    await stopServer().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
    throw err;
  }

  return {
    url: urlOf(ROLE),
    host,
    port,
    password,
    async stop() {
      await stopServer().catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
    async restart() {
      await stopServer();
      await startServer();
    },
    stopServer,
    startServer,
    psql,
    async createDatabase(name) {
      await psql(`CREATE DATABASE ${checkName(name)} OWNER ${ROLE}`, "postgres");
      return urlOf(name);
    },
  };
}

/** The uid and gid of the `postgres` account (created by the postgresql-15 package). */
function postgresAccount(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  const [, , uid, gid] = (line ?? "").split(":");
  if (uid === undefined || gid === undefined) throw new Error("there is no postgres account in /etc/passwd");
  return { uid: Number(uid), gid: Number(gid) };
}
