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
import { z } from "zod";
import type { Logger } from "../core/index.js";

/**
 * OAuth state on disk (docs/wire-contract.md §9.2): three JSON files in a private
 * directory. Secrets are never written: codes and tokens are keyed by the
 * SHA-256 of their value, and a client secret is kept as its SHA-256 only.
 */

const MAX_TEXT = 2048;
const text = z.string().max(MAX_TEXT);

const ClientRecordSchema = z.object({
  client_id: z.string().min(1).max(200),
  client_id_issued_at: z.number().int().nonnegative(),
  /** SHA-256 (hex) of the client secret; absent for a public client. */
  client_secret_sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  client_secret_expires_at: z.number().int().nonnegative().optional(),
  redirect_uris: z.array(text).min(1).max(10),
  token_endpoint_auth_method: z.enum(["none", "client_secret_post", "client_secret_basic"]),
  grant_types: z.array(z.enum(["authorization_code", "refresh_token"])).max(2),
  response_types: z.array(z.literal("code")).max(1),
  client_name: text.optional(),
  client_uri: text.optional(),
  scope: text.optional(),
  software_id: text.optional(),
  software_version: text.optional(),
});
export type ClientRecord = z.infer<typeof ClientRecordSchema>;

const CodeRecordSchema = z.object({
  client_id: z.string().max(200),
  scopes: z.array(z.string().max(200)).max(16),
  /** Epoch seconds. */
  expires_at: z.number(),
  code_challenge: z.string().max(128),
  redirect_uri: text,
  redirect_uri_explicit: z.boolean(),
  resource: text.optional(),
});
export type CodeRecord = z.infer<typeof CodeRecordSchema>;

const TokenRecordSchema = z.object({
  kind: z.enum(["access", "refresh"]),
  client_id: z.string().max(200),
  scopes: z.array(z.string().max(200)).max(16),
  /** Epoch seconds. */
  expires_at: z.number(),
  resource: text.optional(),
});
export type TokenRecord = z.infer<typeof TokenRecordSchema>;

type StateFile = "clients" | "codes" | "tokens";

export interface OAuthStore {
  readonly dir: string;
  readonly clients: Map<string, ClientRecord>;
  /** Keyed by the SHA-256 (hex) of the code. */
  readonly codes: Map<string, CodeRecord>;
  /** Keyed by `access:<sha256>` or `refresh:<sha256>`. */
  readonly tokens: Map<string, TokenRecord>;
  /** Write one file atomically (temp file created 0600, then renamed). Throws on I/O failure. */
  save(file: StateFile): void;
}

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

const HASH_KEY = /^[0-9a-f]{64}$/;
const TOKEN_KEY = /^(access|refresh):[0-9a-f]{64}$/;

/**
 * Open (or create) the state directory and load the three files into memory.
 * Memory is the working copy; every change is written through before the
 * answer that depends on it is sent. Each read-modify-write runs
 * synchronously within one turn of the event loop, so two requests can never
 * interleave inside one (which is what makes codes and refresh tokens
 * single-use under concurrent exchange).
 */
export function openOAuthStore(dir: string, logger: Logger): OAuthStore {
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
  return {
    dir,
    clients,
    codes,
    tokens,
    save(file) {
      writeAtomically(paths[file], `${JSON.stringify(Object.fromEntries(maps[file]), null, 1)}\n`);
    },
  };
}
