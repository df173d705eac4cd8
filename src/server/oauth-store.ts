import {
  chmodSync,
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { z } from "zod";
import type { Logger } from "../core/index.js";
import { digestsEqual } from "./oauth-common.js";
import {
  type ClientRecord,
  ClientRecordSchema,
  type CodeRecord,
  CodeRecordSchema,
  DEFAULT_OAUTH_BOUNDS,
  lockdownDecision,
  type OAuthBounds,
  OAuthStateError,
  type OAuthStore,
  type StoredToken,
  type TokenKind,
  type TokenRecord,
  TokenRecordSchema,
} from "./oauth-state.js";

/**
 * The file backend of the OAuth state (oauth-state.ts), the default for one relay: three JSON
 * files in a private directory, `clients.json` keyed by client id, `codes.json` by the SHA-256 of
 * the code, `tokens.json` by `access:<sha256>` or `refresh:<sha256>`.
 */

type StateFile = "clients" | "codes" | "tokens";

/**
 * Create the state directory 0700, tighten an existing one, and refuse one
 * that group or others can still reach: tokens must not be readable (or
 * replaceable) by another account. A symlink is refused outright.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let stat = lstatSync(dir);
  if (stat.isSymbolicLink() || !stat.isDirectory()) {
    throw new Error(`RELAY_SHELL_AUTH_STATE_DIR ${dir} is not a directory`);
  }
  if ((stat.mode & 0o077) !== 0) {
    try {
      chmodSync(dir, 0o700);
    } catch {
      // Not ours to change (another owner, read-only mount): the check below decides.
    }
    stat = lstatSync(dir);
  }
  if ((stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, "0");
    throw new Error(
      `RELAY_SHELL_AUTH_STATE_DIR ${dir} is accessible by group or others (mode ${mode}); make it 0700`,
    );
  }
}

function readJson(path: string): unknown {
  let raw: string;
  try {
    raw = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw err;
  }
  return JSON.parse(raw) as unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Codes and tokens: a damaged file reads as empty (everyone signs in again,
 * nothing is granted). Entries that do not parse are dropped one by one.
 */
function loadLenient<T>(
  path: string,
  schema: z.ZodType<T>,
  logger: Logger,
  keyPattern: RegExp,
): Map<string, T> {
  const map = new Map<string, T>();
  let data: unknown;
  try {
    data = readJson(path);
  } catch (err) {
    logger.warn({ path, err: String(err) }, "unreadable OAuth state file ignored");
    return map;
  }
  if (!isObject(data)) {
    logger.warn({ path }, "malformed OAuth state file ignored");
    return map;
  }
  for (const [key, value] of Object.entries(data)) {
    const parsed = schema.safeParse(value);
    if (parsed.success && keyPattern.test(key)) map.set(key, parsed.data);
  }
  return map;
}

/**
 * Clients: a damaged file stops start-up. Reading it as empty would silently
 * reopen registration under single-client lockdown.
 */
function loadClients(path: string): Map<string, ClientRecord> {
  let data: unknown;
  try {
    data = readJson(path);
  } catch (err) {
    throw new Error(`OAuth clients file ${path} is unreadable: ${err instanceof Error ? err.message : err}`);
  }
  if (!isObject(data)) throw new Error(`OAuth clients file ${path} is malformed`);
  const map = new Map<string, ClientRecord>();
  for (const [key, value] of Object.entries(data)) {
    const parsed = ClientRecordSchema.safeParse(value);
    if (!parsed.success || parsed.data.client_id !== key) {
      throw new Error(`OAuth clients file ${path} has a malformed entry`);
    }
    map.set(key, parsed.data);
  }
  return map;
}

function writeAtomically(path: string, body: string): void {
  const tmp = `${path}.tmp`;
  try {
    unlinkSync(tmp); // a stale temp file may carry other permissions
  } catch {
    // Normally absent.
  }
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, body);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function tightenFile(path: string): void {
  try {
    const stat = lstatSync(path);
    if ((stat.mode & 0o077) !== 0) chmodSync(path, 0o600);
  } catch {
    // Absent until the first write, which creates it 0600.
  }
}

function dropOldest<V>(map: Map<string, V>, keep: number): void {
  for (const key of map.keys()) {
    if (map.size <= keep) return;
    map.delete(key);
  }
}

/** Remove the entries expired before `now`; how many went. */
function dropExpired(map: Map<string, { expires_at: number }>, now: number): number {
  let removed = 0;
  for (const [key, record] of map) {
    if (record.expires_at < now) {
      map.delete(key);
      removed += 1;
    }
  }
  return removed;
}

const HASH_KEY = /^[0-9a-f]{64}$/;
const TOKEN_KEY = /^(access|refresh):[0-9a-f]{64}$/;
const tokenKey = (kind: TokenKind, digest: string): string => `${kind}:${digest}`;

/**
 * Open (or create) the state directory and load the three files into memory.
 * Memory is the working copy; every change is written through before the
 * promise of the operation settles. Each operation does its whole
 * read-modify-write synchronously, before it returns, so two requests can never
 * interleave inside one (which is what makes codes and refresh tokens
 * single-use under concurrent exchange). A write that fails rejects with an
 * OAuthStateError.
 */
export function openOAuthStore(
  dir: string,
  logger: Logger,
  bounds: OAuthBounds = DEFAULT_OAUTH_BOUNDS,
): OAuthStore {
  ensurePrivateDir(dir);
  const paths: Record<StateFile, string> = {
    clients: join(dir, "clients.json"),
    codes: join(dir, "codes.json"),
    tokens: join(dir, "tokens.json"),
  };
  for (const path of Object.values(paths)) tightenFile(path);
  const clients = loadClients(paths.clients);
  const codes = loadLenient(paths.codes, CodeRecordSchema, logger, HASH_KEY);
  const tokens = loadLenient(paths.tokens, TokenRecordSchema, logger, TOKEN_KEY);
  const maps: Record<StateFile, Map<string, unknown>> = { clients, codes, tokens };

  function save(file: StateFile): void {
    try {
      writeAtomically(paths[file], `${JSON.stringify(Object.fromEntries(maps[file]), null, 1)}\n`);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new OAuthStateError(`OAuth state file ${paths[file]} could not be written: ${reason}`, false);
    }
  }
  function keep(next: StoredToken[]): void {
    for (const { digest, record } of next) tokens.set(tokenKey(record.kind, digest), record);
    dropOldest(tokens, bounds.tokens);
    save("tokens");
  }

  return {
    where: dir,
    clientCount: async () => clients.size,
    getClient: async (clientId) => clients.get(clientId),

    async registerClient(record, lockdown) {
      const decision = lockdownDecision(record, clients.get(record.client_id), clients.size, lockdown);
      if (decision !== "store") return decision;
      clients.set(record.client_id, record);
      save("clients");
      return { outcome: "stored", record };
    },

    async saveCode(digest, record: CodeRecord) {
      codes.set(digest, record);
      dropOldest(codes, bounds.codes);
      save("codes");
    },

    async takeCode(digest) {
      const record = codes.get(digest);
      if (!record) return undefined;
      codes.delete(digest);
      save("codes");
      return record;
    },

    saveTokens: async (next) => keep(next),
    getToken: async (kind, digest): Promise<TokenRecord | undefined> => tokens.get(tokenKey(kind, digest)),

    async rotateRefresh(digest, clientId, next) {
      const key = tokenKey("refresh", digest);
      const record = tokens.get(key);
      if (record?.kind !== "refresh" || !digestsEqual(record.client_id, clientId)) return false;
      tokens.delete(key);
      keep(next);
      return true;
    },

    async revoke(digest, clientId) {
      let removed = 0;
      for (const key of [tokenKey("access", digest), tokenKey("refresh", digest)]) {
        const record = tokens.get(key);
        if (record && digestsEqual(record.client_id, clientId)) {
          tokens.delete(key);
          removed += 1;
        }
      }
      if (removed > 0) save("tokens");
      return removed;
    },

    async deleteToken(kind, digest) {
      if (tokens.delete(tokenKey(kind, digest))) save("tokens");
    },

    async sweep(now) {
      const swept = { codes: dropExpired(codes, now), tokens: dropExpired(tokens, now) };
      if (swept.codes > 0) save("codes");
      if (swept.tokens > 0) save("tokens");
      return swept;
    },
  };
}
