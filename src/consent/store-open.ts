import { createRequire } from "node:module";
import type Database from "better-sqlite3";
import { fail, type Ids, ok } from "../core/index.js";
import { sqliteCode, toFailure } from "./store-errors.js";
import { prepareDatabaseFile, sameFile } from "./store-file.js";
import { SCHEMA_SQL, SCHEMA_VERSION, UnreadableRow } from "./store-rows.js";
import type { StoreResult } from "./types.js";

/** Instance id: 16 hex digits, created once with the database. */
const INSTANCE_BYTES = 8;

/** An open, checked database and its instance id. */
const require = createRequire(import.meta.url);

/**
 * better-sqlite3 (and its native addon), loaded when a store is first
 * opened: a relay with consent off never pays for it at start-up.
 */
function sqlite(): typeof Database {
  return require("better-sqlite3") as typeof Database;
}

export interface OpenedDatabase {
  db: Database.Database;
  instanceId: string;
}

/** Close a connection that will not be handed out, and say why. */
function refuseOpen(db: Database.Database, detail: string): StoreResult<never> {
  try {
    db.close();
  } catch {
    // Closing what never became usable; the refusal already says why.
  }
  return fail({ failure: "unavailable", detail });
}

/**
 * Create the schema in a new (empty) database, or check an existing one: its
 * meta table, a schema version this code understands and an instance id.
 * An existing database is only read; a new one is created in one BEGIN
 * IMMEDIATE that looks again first, so two processes opening a new file at
 * once create it once.
 */
function initialize(db: Database.Database, ids: Ids): string {
  const check = (create: boolean) => (): string | null => {
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .pluck()
      .all() as string[];
    if (tables.length === 0) {
      if (!create) return null;
      db.exec(SCHEMA_SQL);
      const insert = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
      insert.run("schema_version", String(SCHEMA_VERSION));
      insert.run("instance_id", ids.hex(INSTANCE_BYTES));
    } else if (!tables.includes("meta")) {
      throw new UnreadableRow("it has tables but no meta table: it is not a relay-shell consent database");
    }
    const meta = new Map(
      (db.prepare("SELECT key, value FROM meta").all() as Array<{ key: unknown; value: unknown }>).map(
        (row) => [String(row.key), String(row.value)],
      ),
    );
    const version = Number(meta.get("schema_version"));
    if (!Number.isInteger(version) || version < 1)
      throw new UnreadableRow("its schema version is unreadable");
    if (version > SCHEMA_VERSION) {
      throw new UnreadableRow(
        `its schema version ${version} is newer than this relay-shell understands (${SCHEMA_VERSION}); upgrade relay-shell`,
      );
    }
    const instance = meta.get("instance_id") ?? "";
    if (!/^[0-9a-f]{16}$/.test(instance)) throw new UnreadableRow("its instance id is unreadable");
    return instance;
  };
  const instance = db.transaction(check(false)).deferred() ?? db.transaction(check(true)).immediate();
  if (instance === null) throw new UnreadableRow("its schema could not be created");
  return instance;
}

/**
 * Open (creating if needed) the consent database at `path` after checking the
 * file and its directory, in write-ahead-log mode with foreign keys on.
 */
export function openDatabase(
  path: string,
  options: { ids: Ids; busyTimeoutMs: number; euid: number },
): StoreResult<OpenedDatabase> {
  const file = prepareDatabaseFile(path, options.euid);
  if (!file.ok) return fail({ failure: "unavailable", detail: file.error });
  let db: Database.Database;
  try {
    db = new (sqlite())(file.value.path, { fileMustExist: true, timeout: options.busyTimeoutMs });
  } catch (err) {
    return fail({ failure: "unavailable", detail: `cannot open ${file.value.path}: ${String(err)}` });
  }
  if (!sameFile(file.value.path, file.value.identity))
    return refuseOpen(db, `${file.value.path} was replaced while it was opened`);
  let instanceId: string;
  try {
    db.pragma("foreign_keys = ON");
    db.pragma("trusted_schema = OFF");
    const journal = db.pragma("journal_mode = WAL", { simple: true });
    if (journal !== "wal")
      return refuseOpen(db, `${file.value.path} cannot use write-ahead logging (${String(journal)})`);
    db.pragma("synchronous = FULL");
    instanceId = initialize(db, options.ids);
  } catch (err) {
    if (sqliteCode(err) === "SQLITE_NOTADB" || err instanceof UnreadableRow) {
      return refuseOpen(
        db,
        `${file.value.path} is not a usable consent database: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const failure = toFailure(err);
    refuseOpen(db, "");
    return fail({ ...failure.error, detail: `${file.value.path}: ${failure.error.detail}` });
  }
  return ok({ db, instanceId });
}
