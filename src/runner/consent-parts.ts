import type { FollowUpPlan } from "../broker/index.js";
import type { ConsentAct } from "../consent/index.js";

/** The act with the verify and rollback commands bound at arm time: the human approves them too. */
export function withFollowUps(act: ConsentAct, plan: FollowUpPlan): ConsentAct {
  return {
    ...act,
    bound: {
      ...act.bound,
      follow_ups: {
        verify: plan.verifyCommand,
        verify_expect: plan.verifyExpect,
        rollback: plan.rollbackCommand,
        auto_rollback: plan.autoRollback,
      },
    },
  };
}

/** Resolve after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
