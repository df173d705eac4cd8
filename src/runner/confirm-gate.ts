import type { ConfirmBroker } from "../broker/index.js";
import { describeError } from "../core/index.js";
import { confirmRequiredText } from "./format.js";
import type { Gate } from "./tool.js";

/**
 * The Tier-3 confirmation broker as a gate. The runner consults gates only
 * after the deny list and the mode admitted a call, so a refused call never
 * gets here; this gate then looks only at Tier 3 and leaves every other call
 * alone. An armed token for this exact operation is burnt and the call runs
 * (`confirm_execute`); anything else plans a new token and nothing runs. A
 * store that cannot be used refuses the call: without it, no confirmation can
 * be found or planned.
 */
export function createConfirmGate(broker: ConfirmBroker): Gate {
  return {
    name: "confirm-tier3",
    async check(call) {
      // Only Tier 3, and only where the call's policy asks for a confirmation (docs/policy.md).
      if (call.tier !== 3 || !call.policy.confirmTier3) return { kind: "proceed" };
      const identity = { tool: call.tool, policyText: call.policyText, auditArgs: call.auditArgs };
      try {
        const confirmed = await broker.consume(identity);
        if (confirmed) {
          return {
            kind: "proceed",
            action: "confirm_execute",
            ...(confirmed.followUps ? { followUps: confirmed.followUps } : {}),
            release: confirmed.restore,
          };
        }
        const token = await broker.plan({ ...identity, args: call.args });
        return {
          kind: "challenge",
          text: confirmRequiredText(token, broker.ttlSeconds),
          action: "confirm_plan",
        };
      } catch (err) {
        return {
          kind: "refuse",
          reason: `${describeError(err).message}; nothing ran`,
          action: "confirm_plan",
        };
      }
    },
  };
}
