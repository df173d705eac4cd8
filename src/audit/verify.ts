import { closeSync, fstatSync, openSync } from "node:fs";
import { describeError, fail, ok, type Result } from "../core/index.js";
import { chainFields, chainHash, GENESIS } from "./chain.js";
import { parseJsonLossless } from "./json-text.js";
import { forEachLine } from "./read-lines.js";

/** Result of walking one audit file's hash chain (docs/wire-contract.md §6.8). */
export interface VerifyReport {
  /**
   * The fail-closed verdict without `--segment`: present, at least one
   * chained record, no break, and anchored at genesis.
   */
  ok: boolean;
  /**
   * The structural result of the walk: no break was found and the file could
   * be read. A missing file or a log without chained records is chainOk.
   */
  chainOk: boolean;
  /** The file exists and could be opened. */
  present: boolean;
  /** The first chained record is seq 0 with the genesis prev. */
  anchored: boolean;
  /** Chained records verified before the end or the break. */
  records: number;
  /** seq of the first chained record, null when there is none. */
  startSeq: number | null;
  /** 1-based line number of the break, null when none. */
  brokenAt: number | null;
  reason: string;
}

/** Where a walk of the chain stands after the lines it has checked. */
export interface WalkState {
  records: number;
  startSeq: number | null;
  anchored: boolean;
  expectedSeq: number;
  lastChain: string;
  brokenAt: number | null;
  reason: string;
}

/** A line as parsed for the walk: invalid JSON is a value, not an exception. */
export type ParsedLine = Result<unknown, "not-json">;

/** The state of a walk that has seen no line yet. */
export function createWalkState(): WalkState {
  return {
    records: 0,
    startSeq: null,
    anchored: false,
    expectedSeq: 0,
    lastChain: "",
    brokenAt: null,
    reason: "",
  };
}

export function parseLine(line: string): ParsedLine {
  try {
    return ok(parseJsonLossless(line));
  } catch {
    return fail("not-json"); // the caller decides whether that is a legacy line or a break
  }
}

/**
 * One step of the walk: checks one non-blank line, already parsed, and
 * advances the state when it holds; returns a break reason or null. A line
 * before the first chained record is legacy and leaves the state as it was.
 */
export function checkLine(state: WalkState, parsed: ParsedLine, lineNo: number): string | null {
  const fields = parsed.ok ? chainFields(parsed.value) : null;
  if (state.startSeq === null) {
    if (fields === null) return null; // legacy lines before chaining was switched on
    state.startSeq = fields.seq;
    state.anchored = fields.seq === 0 && fields.prev === GENESIS;
    if (fields.seq === 0 && fields.prev !== GENESIS) return `line ${lineNo}: seq 0 must anchor to genesis`;
  } else {
    if (!parsed.ok) return `line ${lineNo}: invalid JSON inside the chained region`;
    if (fields === null) return `line ${lineNo}: record missing chain fields inside the chained region`;
    if (fields.seq !== state.expectedSeq)
      return `line ${lineNo}: expected seq ${state.expectedSeq}, found ${fields.seq}`;
    if (fields.prev !== state.lastChain)
      return `line ${lineNo}: prev does not match the previous record's chain`;
  }
  const body = { ...(parsed.ok ? (parsed.value as Record<string, unknown>) : {}) };
  delete body.chain;
  if (chainHash(fields.prev, body) !== fields.chain) {
    return `line ${lineNo}: record body does not match its chain hash (tampered)`;
  }
  state.records += 1;
  state.expectedSeq = fields.seq + 1;
  state.lastChain = fields.chain;
  return null;
}

/**
 * Walks the chain of one audit file (plain or gzip). Lines before the first
 * chained record are skipped as legacy; from there on every non-blank line
 * must be a chained record that follows the previous one and hashes to its
 * `chain`. Never throws: every failure is a report.
 */
export function verifyAuditChain(path: string): VerifyReport {
  const report = (fields: Partial<VerifyReport> & { reason: string }): VerifyReport => ({
    ok: false,
    chainOk: false,
    present: true,
    anchored: false,
    records: 0,
    startSeq: null,
    brokenAt: null,
    ...fields,
  });

  try {
    const fd = openSync(path, "r");
    try {
      if (fstatSync(fd).isDirectory())
        return report({ present: false, reason: `cannot access audit file: EISDIR: ${path} is a directory` });
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      return report({ chainOk: true, present: false, reason: `audit file not found: ${path}` });
    }
    return report({ present: false, reason: `cannot access audit file: ${describeError(err).message}` });
  }

  const state = createWalkState();
  try {
    forEachLine(path, (line, lineNo) => {
      if (line.trim() === "") return true;
      const broken = checkLine(state, parseLine(line), lineNo);
      if (broken === null) return true;
      state.brokenAt = lineNo;
      state.reason = broken;
      return false;
    });
  } catch (err) {
    return report({ ...progress(state), reason: `read error: ${describeError(err).message}` });
  }

  if (state.brokenAt !== null) return report({ ...progress(state), reason: state.reason });
  if (state.startSeq === null) {
    return report({ chainOk: true, reason: "no chained records found (empty or unchained log)" });
  }
  const base = { ...progress(state), chainOk: true };
  if (state.anchored) {
    return report({
      ...base,
      ok: true,
      reason: `chain intact and genesis-anchored: ${state.records} record(s) from seq 0`,
    });
  }
  return report({
    ...base,
    reason:
      `chain internally consistent: ${state.records} record(s) from seq ${state.startSeq}, ` +
      "but it does not start at genesis (head truncation or a rotation segment; compare the seam " +
      "with the previous file)",
  });
}

function progress(state: WalkState): Pick<VerifyReport, "records" | "startSeq" | "anchored" | "brokenAt"> {
  return {
    records: state.records,
    startSeq: state.startSeq,
    anchored: state.anchored,
    brokenAt: state.brokenAt,
  };
}
