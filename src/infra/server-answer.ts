import type { Logger } from "../core/index.js";
import {
  type InfraResponse,
  OUTCOME_CODES,
  outcomeClass,
  PROTOCOL_VERSION,
} from "../infra-protocol/index.js";
import type { Admission } from "./admission.js";
import type { Dispatcher } from "./dispatch.js";
import type { ReceiptFacts, Receipts } from "./receipts.js";
import { type createRefusalSummaries, isSummarised } from "./refusal-summaries.js";
import { boundedMessage, type Reading } from "./request-read.js";
import type { OpResult, Principal } from "./types.js";

/** What answering one frame needs of the broker's socket server (server.ts). */
export interface AnswerDeps {
  dispatcher: Dispatcher;
  receipts: Receipts;
  logger: Logger;
  admission: Admission;
  summaries: ReturnType<typeof createRefusalSummaries>;
}

/**
 * The answer to one frame, and whether it caused a receipt of its own: a refusal past the
 * caller's budget of receipts is counted into its uid's summary receipt instead (ADR 0036).
 */
export async function answerFrame(
  a: AnswerDeps,
  principal: Principal | null,
  known: boolean,
  reading: Reading,
): Promise<{ response: InfraResponse; receipt: boolean }> {
  const result = await resultOf(a, principal, reading);
  const uid = principal?.uid ?? -1;
  const summarised =
    principal !== null && isSummarised(result.code, known) && !a.admission.ownRefusalReceipt(uid);
  if (!summarised) a.summaries.flush(uid);
  const receiptId = summarised ? a.summaries.receiptId(uid) : a.receipts.newId();
  const response = responseOf(reading, result, receiptId);
  const facts = factsOf(reading, result, response, principal);
  if (!summarised) {
    a.summaries.record(facts);
    return { response, receipt: true };
  }
  a.summaries.add(uid, facts);
  return { response, receipt: false };
}

async function resultOf(a: AnswerDeps, principal: Principal | null, reading: Reading): Promise<OpResult> {
  if (reading.refusal !== null) return reading.refusal;
  if (principal === null || reading.request === null) {
    return { code: "PRINCIPAL_NOT_ALLOWED", message: "the kernel did not say who is connecting" };
  }
  return checkedResult(await a.dispatcher.dispatch(principal, reading.request), a.logger);
}

/**
 * What an operation answered, if it is a result the protocol can carry: a
 * known code, a sentence, data that serialises. Anything else is the
 * broker's own fault and is answered as INTERNAL_ERROR, so the caller still
 * gets a valid line and the receipt is still written.
 */
function checkedResult(result: OpResult, logger: Logger): OpResult {
  const problem = !Object.hasOwn(OUTCOME_CODES, result.code)
    ? `unknown outcome code ${JSON.stringify(String(result.code))}`
    : typeof result.message !== "string"
      ? "a message that is not text"
      : null;
  let serialisable = true;
  try {
    JSON.stringify(result.data ?? null);
  } catch {
    serialisable = false;
  }
  if (problem === null && serialisable) return result;
  logger.error(
    { problem: problem ?? "data that does not serialise" },
    "an operation answered outside the protocol",
  );
  return {
    code: "INTERNAL_ERROR",
    message: "the broker produced an answer it cannot send; its log has the detail",
  };
}

/** The line the caller gets for a result under a receipt. */
function responseOf(reading: Reading, result: OpResult, receiptId: string): InfraResponse {
  const request = reading.request;
  return {
    v: PROTOCOL_VERSION,
    receipt_id: receiptId,
    op: request?.op ?? null,
    profile: request?.profile ?? null,
    run_id: request?.run_id ?? null,
    outcome: outcomeClass(result.code),
    code: result.code,
    message: boundedMessage(result.message),
    ...(result.data !== undefined ? { data: result.data } : {}),
    ...(result.replayed !== undefined ? { replayed: result.replayed } : {}),
  };
}

/** What the receipt of a request records: who asked what, what it claimed, and the answer it got. */
function factsOf(
  reading: Reading,
  result: OpResult,
  response: InfraResponse,
  principal: Principal | null,
): ReceiptFacts {
  const request = reading.request;
  return {
    receiptId: response.receipt_id,
    op: request?.op ?? null,
    profile: response.profile,
    runId: response.run_id,
    idempotencyKey: request?.idempotency_key ?? null,
    requestId: request?.request_id ?? null,
    principal,
    outcome: response.outcome,
    code: response.code,
    claimedIdentity: reading.claims,
    approvalPresent: request?.approval !== undefined,
    approval: result.approval ?? null,
    response,
  };
}
