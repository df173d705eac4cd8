import { describe, expect, it } from "vitest";
import type { AuditLog } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import { silentLogger } from "../core/index.js";
import { createCallCounter } from "../metrics/index.js";
import { type CallBase, createRecorder, describeCall, type Finish } from "./record.js";

const BASE: CallBase = {
  tool: "shell_exec",
  tier: 2,
  classification: { tier: 2, basis: "default", part: "" },
  reason: "permitted",
  args: { command: "touch /tmp/x" },
};

/** A recorder over an audit log that keeps what it was asked to append. */
function recorder() {
  const appended: Array<Record<string, unknown>> = [];
  const audit = {
    append(entry: Record<string, unknown>) {
      appended.push(entry);
      return true;
    },
  } as unknown as AuditLog;
  const metrics = createCallCounter();
  const record = createRecorder({
    settings: { policyMode: "open" } as Settings,
    audit,
    metrics,
    logger: silentLogger,
  });
  return { record, appended, metrics };
}

describe("the record of a finished call", () => {
  it("writes denied and the exit status from the outcome, so the two cannot disagree", () => {
    const { record, appended, metrics } = recorder();
    const finishes: Finish[] = [
      { ...BASE, reason: "matched RELAY_SHELL_POLICY_DENY", text: "[DENIED …]", outcome: "denied" },
      { ...BASE, text: "[CONSENT REQUIRED …]", outcome: "consent_required", action: "consent_request" },
      { ...BASE, text: "[ERROR: OSError: gone]", outcome: "error" },
      { ...BASE, text: "[exit 3]\n", outcome: "ok", exitCode: 3, timedOut: false, truncated: false },
    ];
    for (const f of finishes) record({ requestId: "1", clientId: "" }, f);
    expect(appended.map((r) => [r.denied, r.exitCode])).toEqual([
      [true, null],
      [false, null],
      [false, null],
      [false, 3],
    ]);
    // The keys in the order the audit record has always had them (its bytes stay the same).
    expect(Object.keys(appended[0] ?? {})).toEqual([
      "tool",
      "tier",
      "denied",
      "args",
      "output",
      "exitCode",
      "requestId",
    ]);
    expect([...metrics.snapshot().keys()].sort()).toEqual([
      "shell_exec|2|open|consent_required",
      "shell_exec|2|open|denied",
      "shell_exec|2|open|error",
      "shell_exec|2|open|ok",
    ]);
  });

  it("describes only work that returned with an exit status, a timeout and its own fields", () => {
    const ran = describeCall({
      ...BASE,
      text: "[TIMEOUT after 5s]",
      outcome: "ok",
      exitCode: null,
      timedOut: true,
      fields: { host_count: 2 },
    });
    expect(ran).toMatchObject({ denied: false, exit_code: null, timed_out: true, host_count: 2 });
    const refused = describeCall({ ...BASE, text: "[DENIED …]", outcome: "denied" });
    expect(refused).toMatchObject({ denied: true, exit_code: null, timed_out: false, truncated: false });
    // @ts-expect-error a refusal has no exit status: nothing ran
    describeCall({ ...BASE, text: "[DENIED …]", outcome: "denied", exitCode: 0 });
  });
});
