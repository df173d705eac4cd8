import type { Result, Tier } from "../core/index.js";

/**
 * What a call really does, as a human approves it: the tool, its tier and the
 * consequential arguments of the act (docs/consent.md, "bound arguments").
 * Every value is plain JSON (strings, integers, booleans, null, arrays,
 * objects), so its canonical bytes are well defined.
 */
export interface ConsentAct {
  tool: string;
  tier: Tier;
  bound: Record<string, unknown>;
}

type RequestStatus = "pending" | "approved" | "denied" | "consumed";

/** One act a call asked consent for, as the store keeps it. */
export interface ConsentRequest {
  /** Short id the operator types (`relay-shell consent approve ID`). */
  id: string;
  /** 32 random hex digits, signed with the act; consumed at most once. */
  nonce: string;
  /** sha256 hex of the canonical act (tool, tier, bound): how a re-issued call finds its approval. */
  actDigest: string;
  act: ConsentAct;
  /** Basis of the tier, for the human (the classifier's basis and part). */
  basis: string;
  /** The consent session (MCP session) that asked. */
  session: string;
  /** The MCP client that asked, when it has an id. */
  clientId: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds: after this the request can be neither approved nor consumed. */
  expiresAt: number;
  status: RequestStatus;
  /** The exact bytes a signer signs (canonical JSON, see consentPayload). */
  payload: string;
  /** Present once approved: the armored SSHSIG over `payload`, or another channel's proof. */
  approval?: StoredApproval;
  /** Present once denied. */
  denial?: { by: string; reason: string; at: number };
  /** Present once consumed. */
  consumedAt?: number;
}

/** How an approval was given; the relay verifies it again before every use. */
export interface StoredApproval {
  /** `sshsig` (relay-shell consent approve) or `passkey` (the operator console). */
  channel: "sshsig" | "passkey";
  /** The proof: an armored SSHSIG, or a channel-specific serialized assertion. */
  proof: string;
  /** Who the channel says approved (verified again by the relay, never trusted from here). */
  claimedSigner: string;
  at: number;
}

/** A read lease of one consent session (window or session mode). */
export interface ConsentLease {
  id: string;
  session: string;
  /** The signed read that opened it. */
  openedBy: string;
  mode: "window" | "session";
  createdAt: number;
  /** Epoch milliseconds; for session mode, the session's idle bound is checked as well. */
  expiresAt: number;
  /** Reads left. */
  remaining: number;
  revoked: boolean;
}

/** Reads taken from a lease in one transaction: up to the count asked, never more than it had left. */
export interface TakenReads extends ConsentLease {
  /** How many reads were taken (1 or more). */
  taken: number;
}

/** A consent session: one MCP session (stdio connection, or HTTP session with its OAuth client). */
export interface ConsentSession {
  id: string;
  clientId: string;
  startedAt: number;
  lastSeenAt: number;
  /** Set when the MCP session ended or the operator revoked it. */
  endedAt?: number;
}

/** Why a store operation did not happen. Every one is a refusal for the caller. */
export type StoreFailure =
  | "locked" // BEGIN IMMEDIATE not granted within the busy timeout
  | "not-found"
  | "expired"
  | "not-pending"
  | "not-approved"
  | "consumed"
  | "withdrawn" // the operator denied the request or revoked the lease (the ledger says so)
  | "full" // too many requests wait for a decision already
  | "unavailable"; // the database cannot be opened, read or written

/** Why the store refused an operation or could not answer: a token to act on, and the words for a human. */
export interface StoreError {
  failure: StoreFailure;
  detail: string;
}

export type StoreResult<T> = Result<T, StoreError>;

export interface NewRequest {
  act: ConsentAct;
  actDigest: string;
  basis: string;
  session: string;
  clientId: string;
  /** Seconds the request (and the approval it may receive) stays usable. */
  ttlSeconds: number;
  /** Pending requests allowed at once, for the asking session and for the store as a whole. */
  maxPending?: { session: number; total: number };
}

/**
 * Every pending request, approval, lease, consumed nonce and consent session.
 * Each method that reads then writes is one transaction (BEGIN IMMEDIATE in
 * SQLite, row locks in PostgreSQL): the single lock of docs/consent.md. Both
 * stores answer through promises and never reject: a failure is a StoreResult.
 */
export interface ConsentStore {
  /** Random id of this store's deployment, created with the database; part of every signed payload. */
  readonly instanceId: string;
  /** A new pending request with a fresh id and nonce; its payload is fixed here. */
  createRequest(request: NewRequest): Promise<StoreResult<ConsentRequest>>;
  getRequest(id: string): Promise<StoreResult<ConsentRequest>>;
  /** Requests not yet expired (pending or approved, not consumed), oldest first. */
  listRequests(): Promise<StoreResult<ConsentRequest[]>>;
  /** The newest approved, unexpired, unconsumed request for this act digest, if any. */
  findApproved(actDigest: string): Promise<StoreResult<ConsentRequest | null>>;
  /** The newest pending or denied, unexpired request for this act digest in this session, if any. */
  findOpen(actDigest: string, session: string): Promise<StoreResult<ConsentRequest | null>>;
  /** Attach a proof to a pending, unexpired request, or replace the proof of one approved and not yet used. */
  approve(id: string, approval: StoredApproval): Promise<StoreResult<ConsentRequest>>;
  deny(id: string, by: string, reason: string): Promise<StoreResult<ConsentRequest>>;
  /**
   * Mark an approved request consumed, once: the nonce must match and the
   * request must be approved, unexpired and not consumed, all in one
   * transaction. Of two processes racing, exactly one gets ok.
   */
  consume(id: string, nonce: string): Promise<StoreResult<ConsentRequest>>;
  /** Record a nonce consumed elsewhere (a second store, such as the INFRA daemon's); false when already there. */
  consumeNonce(nonce: string, expiresAt: number): Promise<StoreResult<boolean>>;
  openLease(lease: Omit<ConsentLease, "id" | "revoked">): Promise<StoreResult<ConsentLease>>;
  /**
   * Take one read from the session's open lease (unexpired, not revoked,
   * remaining > 0, session live and not idle past `idleMs`); null when there is none.
   */
  takeLeaseRead(session: string, idleMs: number, count?: number): Promise<StoreResult<TakenReads | null>>;
  /** One lease as stored now (read only); null when there is none with this id. */
  getLease(id: string): Promise<StoreResult<ConsentLease | null>>;
  /**
   * A number that changes whenever another connection committed to the store
   * since this one last looked (SQLite's data_version): while it holds still,
   * what this process read from the store is still current.
   */
  changeCounter(): Promise<StoreResult<number>>;
  listLeases(): Promise<StoreResult<ConsentLease[]>>;
  /** Revoke one lease by id, or every lease of a session by session id; returns how many. */
  revoke(idOrSession: string): Promise<StoreResult<number>>;
  revokeAll(): Promise<StoreResult<number>>;
  /** Create or refresh a consent session (last seen = now). */
  touchSession(id: string, clientId: string): Promise<StoreResult<ConsentSession>>;
  /** End a consent session and revoke its leases. */
  endSession(id: string): Promise<StoreResult<void>>;
  listSessions(): Promise<StoreResult<ConsentSession[]>>;
  /** Delete what expired more than `graceMs` ago. */
  prune(graceMs: number): Promise<StoreResult<number>>;
  close(): Promise<void>;
}
