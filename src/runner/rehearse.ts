import type { AuditLog } from "../audit/index.js";
import type { Logger } from "../core/index.js";
import type { Admit } from "./admission.js";
import type { Tool } from "./tool.js";

/**
 * Take one call through validation and admission (policy text, redaction,
 * classification, the lists, the audit's room) and build its record, with
 * nothing run, nothing written and nothing decided for anyone. The server
 * does this once after start-up so the first real call does not pay for
 * compiling that path. Never throws.
 */
export function rehearseCall(
  tool: Tool | undefined,
  rawArgs: unknown,
  deps: { admit: Admit; audit: Pick<AuditLog, "rehearse">; logger: Logger },
): void {
  try {
    const parsed = tool?.parse(rawArgs);
    if (!tool || !parsed?.ok) return;
    const admission = deps.admit(tool, parsed.args);
    if (!admission.admitted) return;
    deps.audit.rehearse({
      tool: tool.name,
      tier: admission.tier,
      denied: false,
      args: admission.auditArgs,
      output: "[exit 0]\n",
      exitCode: 0,
    });
  } catch (err) {
    deps.logger.warn({ err: String(err), tool: tool?.name }, "rehearsal of a call failed");
  }
}
