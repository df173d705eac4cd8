import { z } from "zod";
import { canonicalJson } from "../core/index.js";

/**
 * The OAuth authorization server's state (docs/wire-contract.md §9.2) as one asynchronous
 * interface with two backends: three JSON files in a private directory for one relay
 * (oauth-store.ts), and tables on the shared PostgreSQL database for several (oauth-pg-store.ts).
 * Secrets are never stored: codes and tokens are keyed by the SHA-256 (hex) of their value, and
 * a client secret is kept as its SHA-256 only. Every step that decides who gets what (taking a
 * code, spending a refresh token, the lockdown check) is one atomic operation of the store, so
 * of several relays racing on the same value exactly one wins.
 */

const MAX_TEXT = 2048;
const text = z.string().max(MAX_TEXT);

export const ClientRecordSchema = z.object({
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

export const CodeRecordSchema = z.object({
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

export const TokenRecordSchema = z.object({
  kind: z.enum(["access", "refresh"]),
  client_id: z.string().max(200),
  scopes: z.array(z.string().max(200)).max(16),
  /** Epoch seconds. */
  expires_at: z.number(),
  resource: text.optional(),
});
export type TokenRecord = z.infer<typeof TokenRecordSchema>;
export type TokenKind = TokenRecord["kind"];

/** A token to keep: the SHA-256 (hex) of its value and what it grants. */
export interface StoredToken {
  digest: string;
  record: TokenRecord;
}

/** What a registration came to: stored, an identical re-registration, or refused by lockdown. */
export type Registered =
  | { outcome: "stored"; record: ClientRecord }
  | { outcome: "unchanged"; record: ClientRecord }
  | { outcome: "refused" };

/** How much a store keeps at most; beyond it the oldest go first, so a flood cannot grow it. */
export interface OAuthBounds {
  codes: number;
  tokens: number;
}

export const DEFAULT_OAUTH_BOUNDS: OAuthBounds = { codes: 100, tokens: 10_000 };

/**
 * The state could not be read or written (a file, the database): the request that needed it
 * fails and grants nothing. `transient` when trying again later can succeed (the database is
 * unreachable or busy), which the answer says with a 503.
 */
export class OAuthStateError extends Error {
  readonly transient: boolean;

  constructor(message: string, transient: boolean) {
    super(message);
    this.name = "OAuthStateError";
    this.transient = transient;
  }
}

export interface OAuthStore {
  /** Where the state lives, for log lines: the directory, or PostgreSQL's host:port. */
  readonly where: string;
  clientCount(): Promise<number>;
  getClient(clientId: string): Promise<ClientRecord | undefined>;
  /**
   * Store a client. With `lockdown` on and a client present, only a re-registration identical
   * to that client passes (unchanged); anything new or changed is refused. The check and the
   * write are one step, so two relays cannot each admit a first client.
   */
  registerClient(record: ClientRecord, lockdown: boolean): Promise<Registered>;
  /** Keep a code under the SHA-256 of its value. */
  saveCode(digest: string, record: CodeRecord): Promise<void>;
  /** Remove a code and return it: of any number of concurrent takers exactly one gets it. */
  takeCode(digest: string): Promise<CodeRecord | undefined>;
  saveTokens(tokens: StoredToken[]): Promise<void>;
  getToken(kind: TokenKind, digest: string): Promise<TokenRecord | undefined>;
  /**
   * Spend the refresh token `digest` of `clientId` and keep `next` in one step: false, and
   * nothing kept, when it was already spent (of two racing refreshes exactly one gets true).
   */
  rotateRefresh(digest: string, clientId: string, next: StoredToken[]): Promise<boolean>;
  /** Remove the access or refresh token with this digest if it is `clientId`'s; how many went. */
  revoke(digest: string, clientId: string): Promise<number>;
  /** Forget one token (found expired). */
  deleteToken(kind: TokenKind, digest: string): Promise<void>;
  /** Remove the codes and tokens that expired before `now` (epoch seconds); how many of each. */
  sweep(now: number): Promise<{ codes: number; tokens: number }>;
}

/** The lockdown rule on what a store holds: the same decision in both backends. */
export function lockdownDecision(
  record: ClientRecord,
  existing: ClientRecord | undefined,
  clients: number,
  lockdown: boolean,
): Registered | "store" {
  if (!lockdown || clients === 0) return "store";
  if (existing && canonicalJson(existing) === canonicalJson(record)) {
    return { outcome: "unchanged", record: existing };
  }
  return { outcome: "refused" };
}
