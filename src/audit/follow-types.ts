/** What a follower of the audit file (follow.ts) delivers and promises. */
import type { Clock } from "../core/index.js";
import type { ChainAnchor } from "./chain.js";

/** The chain status of one line, computed by the same step `--verify-audit` walks with. */
export type FollowChain =
  /** Its `seq`/`prev`/`chain` link holds, and so does every link before it since the walk began. */
  | { status: "verified"; seq: number; anchored: boolean }
  /** No chained record yet: the line is not part of a chain (`RELAY_SHELL_AUDIT_CHAIN=false`, or legacy lines). */
  | { status: "unchained" }
  /** The chain broke at line `brokenAt` of this file, for `reason`; every later line carries the same break. */
  | { status: "broken"; brokenAt: number; reason: string };

/** One non-blank line of the audit file, in file order. */
export interface FollowedLine {
  /** Which file: 0 for the first one followed, one more each time the follower starts over. */
  file: number;
  /** 1-based line number in that file, blank lines counted, as `--verify-audit` counts them. */
  line: number;
  /** Length of the line in bytes, without its newline. */
  bytes: number;
  /**
   * The parsed record, or null when the line is unreadable. Read as the
   * verifier reads it: a number whose text a double would not give back
   * (`2.0`, a 64-bit integer) is a `JsonNumberText`.
   */
  record: Record<string, unknown> | null;
  /** The line as written, or null when it was over the length limit and so never held. */
  text: string | null;
  /** Why `record` is null: not JSON, not an object, or too long. Null for a record. */
  unreadable: string | null;
  chain: FollowChain;
}

/** The follower started over on a file: the path now names a new file, or the file was cut short. */
export interface FollowReset {
  reason: "rotated" | "truncated";
  /** The `file` number of the lines that follow. */
  file: number;
  /**
   * True when the chain walk goes on from the last record before the reset,
   * so the seam is checked (the writer continues its chain across a rotation);
   * false when the walk had broken and starts afresh on the new content.
   */
  chainCarried: boolean;
}

/** A point to follow from: a line start of the file, and the chain link the next record must continue. */
export interface FollowPosition {
  offset: number;
  /** Lines before `offset` (the next line is `line + 1`). */
  line: number;
  /** The next record's expected `seq` and `prev`; null when no intact chain leads up to `offset`. */
  anchor: ChainAnchor | null;
}

export interface FollowOptions {
  /** Receives every line, in order, in batches; never called with an empty batch. */
  onRecords(batch: FollowedLine[]): void;
  onReset?(event: FollowReset): void;
  /** A failure to open or read the file (other than its absence), or one thrown by a callback. */
  onError?(error: Error): void;
  /** Start here instead of at the first byte (a position from {@link AuditFollower.position}). */
  from?: FollowPosition;
  maxLineBytes?: number;
  pollMs?: number;
  clock?: Clock;
}

export interface AuditFollower {
  /** Just after the last line delivered: where a later follower can resume. */
  position(): FollowPosition;
  /** Stops the watcher and the timers and closes the file; nothing is delivered afterwards. */
  close(): void;
}
