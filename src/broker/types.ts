/**
 * Verify and rollback commands bound to a confirmation token at arm time
 * (ADR 0010 of this project). An empty string means "none".
 */
export interface FollowUpPlan {
  verifyCommand: string;
  rollbackCommand: string;
  /** A literal substring the verify output must contain; "" = only the exit status counts. */
  verifyExpect: string;
  autoRollback: boolean;
}

/** What the broker needs to know about an admitted Tier-3 call. */
export interface OperationIdentity {
  tool: string;
  /** Every byte the executor will see (command, stdin, script, env). */
  policyText: string;
  /** The raw, unredacted audit arguments: the target (host, cwd, user, port, ...). */
  auditArgs: Record<string, unknown>;
}

export interface PlannedOperation extends OperationIdentity {
  /**
   * The validated arguments of the planned call, kept in memory only: the arm
   * step checks verify/rollback commands against policy as this same call.
   */
  args: unknown;
}

/** What the arm step may see of a live token. */
export interface TokenView {
  tool: string;
  args: unknown;
  armed: boolean;
  followUps: FollowUpPlan | null;
}

export type ArmOutcome =
  | { kind: "armed"; followUps: FollowUpPlan | null }
  /** Unknown, expired or already used. */
  | { kind: "unknown" }
  /** Already armed with other verify/rollback commands: they cannot change after the first arm. */
  | { kind: "conflict" };

/** A burnt token: the call it matched may run now, with these follow-ups. */
interface Confirmation {
  fingerprint: string;
  followUps: FollowUpPlan | null;
  /**
   * Put the burnt token back, armed as it was, with its original expiry: for
   * a call a later gate stopped before it ran, so the confirmation is not lost.
   * Never rejects: a token that cannot be put back is lost, and the caller
   * plans again.
   */
  restore(): Promise<void>;
}

export interface ConfirmBrokerConfig {
  /** Token lifetime in seconds from the plan (floored to 1). */
  ttlSeconds: number;
  /** RELAY_SHELL_CONFIRM_ROLLBACK: whether arming may bind verify/rollback commands. */
  rollback: boolean;
  /** Live tokens kept at most (default 256). */
  maxEntries?: number;
}

/**
 * The Tier-3 confirmation broker (ADR 0009): plan → arm → execute with
 * single-use, TTL-bounded tokens bound to one exact operation. Two stores
 * stand behind it: the process's memory (one relay; broker.ts) and
 * PostgreSQL (several relays on one database; pg-broker.ts). Either way a
 * token armed through one relay is consumed exactly once through any of them.
 * A method rejects only when its store cannot be used; the message says why.
 */
export interface ConfirmBroker {
  /** Effective token lifetime in seconds. */
  readonly ttlSeconds: number;
  readonly rollback: boolean;
  /** Mint a token for an admitted Tier-3 call that found no armed match. */
  plan(operation: PlannedOperation): Promise<string>;
  /** The live entry behind a token, or null (unknown, expired, used). */
  inspect(token: string): Promise<TokenView | null>;
  /**
   * Arm a token, binding follow-ups (null = none); idempotent for identical follow-ups.
   * Throws, without touching the store, when follow-ups are offered to a broker without pairing.
   */
  arm(token: string, followUps: FollowUpPlan | null): Promise<ArmOutcome>;
  /** Find the first armed, unexpired token for this exact operation and burn it. */
  consume(operation: OperationIdentity): Promise<Confirmation | null>;
  /** Live tokens after sweeping the expired ones. */
  pending(): Promise<number>;
}
