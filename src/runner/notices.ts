import type { PolicyMode, Settings } from "../config/index.js";
import { type Tier, tierName } from "../core/index.js";
import { BASIS_TEXT, type Basis, type EffectivePolicy } from "../policy/index.js";
import type { StructuredResult } from "./structured.js";
import type { WorkResult } from "./work.js";

/**
 * Trailing notices (ADR 0011):
 * a message to the caller that what just ran was judged risky, or
 * that the remote end was not authenticated. They are computed after the
 * audit record is written, from the decision and the work's reported
 * host-key outcomes only; they never contain command text, so they cannot
 * leak what redaction hid, and they are not evidence of anything.
 */
export interface NoticeInput {
  /** RELAY_SHELL_UNSAFE_NOTICES. */
  enabled: boolean;
  tier: Tier;
  basis: Basis;
  mode: PolicyMode;
  /** The Tier-3 confirmation broker is on. */
  brokerOn: boolean;
  /** The call consumed an armed confirmation token. */
  confirmed: boolean;
  /** The call ran on a human's signed approval of its exact act (docs/consent.md). */
  consented?: boolean;
  /** The work's structured fields: `host_key`, `jump_host_keys`, `host_keys` are read. */
  fields?: Record<string, unknown> | undefined;
}

export const HEURISTIC_DISCLAIMER = "Classification is a heuristic, not a boundary";
const MAX_LISTED_HOSTS = 8;
const MAX_LABEL = 80;

function tierLine(input: NoticeInput): string | null {
  if (input.tier < 2) return null;
  const phrase = BASIS_TEXT[input.basis] ?? "classified by the tier rules";
  const head = `[NOTICE tier ${input.tier} (${tierName(input.tier)}), ${phrase} (${input.basis}).`;
  let consequence: string;
  if (input.tier === 3) {
    if (input.consented) consequence = "It may not be undoable; a human approved this exact act first";
    else if (input.confirmed) consequence = "It may not be undoable; it was explicitly confirmed first";
    else if (input.brokerOn) consequence = "It may not be undoable, and no confirmation step was required";
    else {
      consequence =
        "It may not be undoable, and no confirmation step was required; set RELAY_SHELL_CONFIRM_TIER3=true to require one";
    }
  } else {
    consequence =
      input.mode === "guarded"
        ? "It may change state that a user or dependent will notice; RELAY_SHELL_POLICY_ALLOW admitted it"
        : "It may change state that a user or dependent will notice; guarded mode would refuse it without an allow-list match";
  }
  return `${head} ${consequence}. ${HEURISTIC_DISCLAIMER}]`;
}

/** A host name as shown in a notice: printable, bracket-free, bounded. */
function label(report: Record<string, unknown>): string | null {
  // The name the caller used (fleet tools report it) wins; otherwise the endpoint that was dialled.
  let shown: string;
  if (typeof report.name === "string" && report.name !== "") shown = report.name;
  else if (typeof report.host === "string" && report.host !== "") {
    const port = report.port;
    shown = typeof port === "number" && port !== 22 && port > 0 ? `${report.host}:${port}` : report.host;
  } else return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = shown.replace(/[\u0000-\u001f\u007f[\]]/g, "");
  return clean.length > MAX_LABEL ? `${clean.slice(0, MAX_LABEL)}…` : clean;
}

function reportsOf(fields: Record<string, unknown> | undefined): Record<string, unknown>[] {
  if (!fields) return [];
  const out: Record<string, unknown>[] = [];
  const take = (value: unknown) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      out.push(value as Record<string, unknown>);
    }
  };
  take(fields.host_key);
  for (const key of ["jump_host_keys", "host_keys"]) {
    const list = fields[key];
    if (Array.isArray(list)) for (const item of list) take(item);
  }
  return out;
}

function listed(names: string[]): string {
  const head = names.slice(0, MAX_LISTED_HOSTS).join(", ");
  const rest = names.length - MAX_LISTED_HOSTS;
  return rest > 0 ? `${head} and ${rest} more` : head;
}

function hostKeyLine(fields: Record<string, unknown> | undefined): string | null {
  const unchecked = new Set<string>();
  const learned = new Set<string>();
  for (const report of reportsOf(fields)) {
    const name = label(report);
    if (name === null) continue;
    if (report.status === "unchecked") unchecked.add(name);
    else if (report.status === "learned") learned.add(name);
  }
  const parts: string[] = [];
  if (unchecked.size > 0) {
    parts.push(
      `host-key verification was off for ${listed([...unchecked])} (known_hosts=ignore); the remote identity was not checked`,
    );
  }
  if (learned.size > 0) {
    parts.push(
      `first contact with ${listed([...learned])}: key learned and pinned (known_hosts=accept-new); later connections must present the same key`,
    );
  }
  return parts.length > 0 ? `[NOTICE ssh ${parts.join("; ")}]` : null;
}

/**
 * Processes a one-shot command left running, stopped when it ended
 * (docs/adr/0019-one-shot-commands-stop-what-they-start.md): the caller
 * learns that its daemon is gone, and where long-lived work belongs.
 */
function stoppedProcessesLine(fields: Record<string, unknown> | undefined): string | null {
  const count = fields?.stopped_processes;
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count <= 0) return null;
  const what = count === 1 ? "1 background process was" : `${count} background processes were`;
  return `[NOTICE ${what} stopped: what a one-shot command starts ends with it; use shell_spawn for long-lived work]`;
}

/**
 * At most three lines: the tier line (Tier 2 and 3 only), then the host-key
 * line (a host dialled with checking off, or whose key was learned now), then
 * the line about background processes a one-shot command left and lost.
 * Never throws: a notice that cannot be computed is simply not shown.
 */
export function computeNotices(input: NoticeInput): string[] {
  try {
    if (!input.enabled) return [];
    const lines: string[] = [];
    const tier = tierLine(input);
    if (tier !== null) lines.push(tier);
    const keys = hostKeyLine(input.fields);
    if (keys !== null) lines.push(keys);
    const stopped = stoppedProcessesLine(input.fields);
    if (stopped !== null) lines.push(stopped);
    return lines;
  } catch {
    // A malformed field from a tool must not fail a call that already ran and was recorded.
    return [];
  }
}

/**
 * The returned text with its notices: after a newline, one per line; or,
 * for a JSON-object result, inside it as a `notices` array so it still
 * parses. The audited text is the part before, which is why this runs last.
 */
export function attachNotices(text: string, notices: readonly string[], json: boolean): string {
  if (notices.length === 0) return text;
  if (json) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
        const object = parsed as Record<string, unknown>;
        if ("notices" in object) return JSON.stringify({ ...object, notices: [...notices] });
        // Splice rather than re-serialise, so every byte before the array is the audited text.
        const end = text.lastIndexOf("}");
        const comma = Object.keys(object).length > 0 ? "," : "";
        return `${text.slice(0, end)}${comma}"notices":${JSON.stringify(notices)}${text.slice(end)}`;
      }
    } catch {
      // Not JSON after all (a truncated body): fall back to trailing lines.
    }
  }
  return `${text}\n${notices.join("\n")}`;
}

/**
 * The line for a call whose work ran but whose audit record (or the record of
 * one of its verify/rollback steps) did not reach the audit file (ADR 0014).
 * Shown whatever RELAY_SHELL_UNSAFE_NOTICES says: it is not a risk hint but
 * the one place the caller learns that what it just did is not on the record.
 */
function auditLostNotice(failClosed: boolean): string {
  const after = failClosed
    ? "calls that act (every call but the relay's own introspection) are refused until the file takes records again"
    : "RELAY_SHELL_AUDIT_FAIL_CLOSED is off, so calls keep running while it cannot";
  return `[NOTICE audit this call ran, but its audit record could not be written to the audit file (a copy went to the server's stderr); ${after}]`;
}

/**
 * The notices of a finished call attached to its text and its structuredContent
 * (in place). Called after every record of the call was written, so they
 * never change a recorded hash.
 */
export function withNotices<R extends { text: string; structured: StructuredResult }>(
  result: R,
  decided: { tier: Tier; basis: Basis },
  work: WorkResult,
  approval: { confirmed: boolean; consented: boolean },
  under: { settings: Settings; policy: Pick<EffectivePolicy, "mode" | "confirmTier3"> },
  recordLost = false,
): R {
  const { settings, policy } = under;
  const notices = computeNotices({
    enabled: settings.unsafeNotices,
    tier: decided.tier,
    basis: decided.basis,
    mode: policy.mode,
    brokerOn: policy.confirmTier3,
    confirmed: approval.confirmed,
    consented: approval.consented,
    fields: work.threw ? undefined : work.fields,
  });
  if (recordLost) notices.push(auditLostNotice(settings.auditFailClosed));
  if (notices.length === 0) return result;
  const json = !work.threw && work.json && result.structured.verify === undefined;
  result.text = attachNotices(result.text, notices, json);
  result.structured.notices = notices;
  return result;
}
