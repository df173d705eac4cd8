import type { AuditLog } from "../audit/index.js";
import type { Settings } from "../config/index.js";
import type { Logger } from "../core/index.js";
import { type Admit, admittedBase } from "./admission.js";
import { withNotices } from "./notices.js";
import { describeCall, exitCodeOf, recordOf } from "./record.js";
import type { Tool } from "./tool.js";
import { shapeWork } from "./work.js";

/**
 * Take one call through validation and admission (policy text, redaction,
 * classification, the lists, the audit's room), then through what follows
 * its work as if the work had printed nothing and exited 0 (the output
 * bound, the exit prefix, its record, its structuredContent, its notices),
 * with nothing run, nothing written and nothing decided for anyone. The
 * server does this once after start-up so the first real call does not pay
 * for compiling that path. Never throws.
 */
export function rehearseCall(
  tool: Tool | undefined,
  rawArgs: unknown,
  deps: { admit: Admit; audit: Pick<AuditLog, "rehearse">; settings: Settings; logger: Logger },
): void {
  try {
    const parsed = tool?.parse(rawArgs);
    if (!tool || !parsed?.ok) return;
    const admission = deps.admit(tool, parsed.value, { clientId: "" });
    if (!admission.admitted) return;
    const work = shapeWork(tool, parsed.value, { body: "", exitCode: 0 }, deps.settings);
    const finished = recordOf(admittedBase(tool, admission), work, tool.auditAction);
    deps.audit.rehearse({
      tool: finished.tool,
      tier: finished.tier,
      denied: false,
      args: finished.args,
      output: finished.text,
      exitCode: exitCodeOf(finished),
    });
    withNotices(
      { text: finished.text, structured: describeCall(finished) },
      { tier: admission.tier, basis: admission.classification.basis },
      work,
      { confirmed: false, consented: false },
      { settings: deps.settings, policy: admission.policy },
    );
  } catch (err) {
    deps.logger.warn({ err: String(err), tool: tool?.name }, "rehearsal of a call failed");
  }
}
