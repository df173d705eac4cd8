import type { Logger } from "../core/index.js";
import type { OutcomeCode } from "../infra-protocol/index.js";
import type { ReceiptFacts, Receipts } from "./receipts.js";

/**
 * Answers that did nothing and may come by the thousand: unreadable frames
 * and refusals decided before any operation or approval. Past the caller's
 * budget of receipts of their own, they are counted into a summary receipt.
 */
const SUMMARISED_CODES: ReadonlySet<OutcomeCode> = new Set<OutcomeCode>([
  "FRAME_TOO_LARGE",
  "MALFORMED_JSON",
  "SCHEMA_VIOLATION",
  "PRINCIPAL_NOT_ALLOWED",
  "PROFILE_REQUIRED",
  "PROFILE_NOT_FOUND",
  "PROFILE_INVALID",
  "PROFILE_DISABLED",
  "RUN_ID_REQUIRED",
  "IDEMPOTENCY_KEY_REQUIRED",
]);

/** Refusals one summary receipt counts at most. */
const MAX_SUMMARY_COUNT = 100_000;

/**
 * Whether an answer may go into a summary: every answer to a principal no
 * profile lists (nothing it asks can run), and the listed ones' refusals
 * that came before any operation or approval.
 */
export function isSummarised(code: OutcomeCode, known: boolean): boolean {
  return !known || SUMMARISED_CODES.has(code);
}

/** The refusals of one uid not yet written, under one receipt id every answer they got carries. */
interface Summary {
  receiptId: string;
  first: ReceiptFacts | null;
  count: number;
  codes: Record<string, number>;
  timer: NodeJS.Timeout;
}

interface RefusalSummaries {
  /** Write one receipt now, as any answer's. */
  record(facts: ReceiptFacts): void;
  /** The receipt id of `uid`'s open summary, opening one (written within the window) when there is none. */
  receiptId(uid: number): string;
  /** Count one more refusal into `uid`'s open summary; its facts are kept when it is the first. */
  add(uid: number, facts: ReceiptFacts): void;
  /** Write `uid`'s open summary now, if it has one. */
  flush(uid: number): void;
  flushAll(): void;
}

/**
 * One summary receipt per uid for refusals past its budget: the first
 * refusal's facts in full, the count by code, written when the window
 * closes, the uid gets an answer that is not summarised, the count reaches
 * its bound, or the broker stops (ADR 0036).
 */
export function createRefusalSummaries(deps: {
  receipts: Receipts;
  logger: Logger;
  windowMs: number;
}): RefusalSummaries {
  const summaries = new Map<number, Summary>();

  function record(facts: ReceiptFacts): void {
    if (!deps.receipts.write(facts)) {
      deps.logger.error(
        { receipt: facts.receiptId, problem: deps.receipts.problem() },
        "a receipt did not reach the log",
      );
    }
  }

  function flush(uid: number): void {
    const summary = summaries.get(uid);
    if (summary === undefined) return;
    summaries.delete(uid);
    clearTimeout(summary.timer);
    if (summary.first === null) return;
    record({ ...summary.first, burst: { count: summary.count, codes: summary.codes } });
  }

  function open(uid: number): Summary {
    let summary = summaries.get(uid);
    if (summary === undefined) {
      const timer = setTimeout(() => flush(uid), deps.windowMs);
      timer.unref();
      summary = { receiptId: deps.receipts.newId(), first: null, count: 0, codes: {}, timer };
      summaries.set(uid, summary);
    }
    return summary;
  }

  return {
    record,
    receiptId: (uid) => open(uid).receiptId,
    add(uid, facts) {
      const summary = open(uid);
      summary.first ??= facts;
      summary.count += 1;
      summary.codes[facts.code] = (summary.codes[facts.code] ?? 0) + 1;
      if (summary.count >= MAX_SUMMARY_COUNT) flush(uid);
    },
    flush,
    flushAll() {
      for (const uid of [...summaries.keys()]) flush(uid);
    },
  };
}
