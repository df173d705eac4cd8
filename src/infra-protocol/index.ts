export {
  requestInfra,
  type UnreachableReason,
} from "./client.js";
export {
  type ConsentCapability,
  IDEMPOTENCY_KEY,
  IDENTITY_CLAIM_FIELDS,
  type InfraRequest,
  type InfraResponse,
  MAX_FRAME_BYTES,
  type Operation,
  OUTCOME_CODES,
  OUTCOMES,
  type OutcomeClass,
  type OutcomeCode,
  outcomeClass,
  PROFILE_ID,
  PROTOCOL_VERSION,
  parseResponse,
  RUN_ID,
  requestSchema,
} from "./protocol.js";
