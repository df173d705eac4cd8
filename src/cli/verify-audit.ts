import { verifyAuditChain } from "../audit/index.js";

export interface VerifyAuditOptions {
  path: string;
  /** Accept a chain that does not start at genesis (a rotation segment). */
  segment: boolean;
  json: boolean;
}

export interface VerifyAuditResult {
  exitCode: 0 | 2;
  stdout: string;
  stderr: string;
}

/**
 * `relay-shell --verify-audit` (docs/wire-contract.md §6.8, §12). Fail closed: success
 * needs a present file with at least one chained record, no break, and a
 * genesis anchor; `segment` waives only the anchor. The text form prints the
 * reason on stdout and the verdict on stderr; `json` prints one object on
 * stdout and nothing on stderr.
 */
export function runVerifyAudit(options: VerifyAuditOptions): VerifyAuditResult {
  const { path, segment, json } = options;
  const lib = verifyAuditChain(path);

  let ok = false;
  let reason = lib.reason;
  if (!lib.present) {
    reason = `audit file not found or unreadable: ${path}`;
    if (!lib.chainOk) reason += ` (${lib.reason})`;
  } else if (!lib.chainOk) {
    ok = false;
  } else if (lib.records === 0) {
    reason =
      `no chained records in ${path}: an empty or unchained log proves nothing ` +
      "(is RELAY_SHELL_AUDIT_CHAIN=true set for the server that writes it?)";
  } else if (!lib.anchored && !segment) {
    reason = `${lib.reason}; refused because the chain must start at genesis (pass --segment to accept a rotation segment)`;
  } else {
    ok = true;
  }

  if (json) {
    const out = {
      ok,
      chain_ok: lib.chainOk,
      present: lib.present,
      anchored: lib.anchored,
      segment_mode: segment,
      path,
      records: lib.records,
      start_seq: lib.startSeq,
      broken_at: lib.brokenAt,
      reason,
    };
    return { exitCode: ok ? 0 : 2, stdout: `${JSON.stringify(out, null, 2)}\n`, stderr: "" };
  }
  const where = lib.brokenAt === null ? "" : ` (line ${lib.brokenAt})`;
  return {
    exitCode: ok ? 0 : 2,
    stdout: `${reason}\n`,
    stderr: ok ? "relay-shell: verify-audit OK\n" : `relay-shell: verify-audit FAILED${where}\n`,
  };
}
