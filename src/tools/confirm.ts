import { type ConfirmBroker, type FollowUpPlan, hasFollowUps, tokenFingerprint } from "../broker/index.js";
import { RelayError } from "../core/index.js";
import type { TierSpec } from "../policy/index.js";
import { annotationsFor, defineTool, type Tool } from "../runner/index.js";

export interface ConfirmToolDeps {
  /** null when RELAY_SHELL_CONFIRM_TIER3 is off: the tool exists and says so. */
  broker: ConfirmBroker | null;
  /**
   * The runner's answer to "would this command be admitted as a follow-up of
   * that call right now?" (null = yes). Arming never binds a command that
   * policy would refuse.
   */
  vetFollowUp(toolName: string, args: unknown, command: string): string | null;
}

const ZERO: TierSpec = { kind: "fixed", tier: 0 };
const DISABLED = "[confirmation broker disabled (RELAY_SHELL_CONFIRM_TIER3 is off)]";
const ARMED = "[armed: re-issue the exact Tier-3 call now to execute it]";
const INVALID = "[invalid or expired confirmation token]";

function refuse(message: string): RelayError {
  return RelayError.untyped(`${message}; the token was not armed`);
}

/** The caller's follow-up parameters, checked for combinations that could never work as asked. */
function followUpPlanOf(a: {
  verify_command: string;
  rollback_command: string;
  verify_expect: string;
  auto_rollback: boolean;
}): FollowUpPlan | null {
  const plan: FollowUpPlan = {
    verifyCommand: a.verify_command,
    rollbackCommand: a.rollback_command,
    verifyExpect: a.verify_expect,
    autoRollback: a.auto_rollback,
  };
  if (!hasFollowUps(plan)) return null;
  if (plan.verifyExpect !== "" && plan.verifyCommand === "") {
    throw refuse("verify_expect needs a verify_command");
  }
  if (plan.autoRollback && plan.rollbackCommand === "")
    throw refuse("auto_rollback needs a rollback_command");
  if (plan.autoRollback && plan.verifyCommand === "") {
    throw refuse("auto_rollback needs a verify_command: a failed verify is the only trigger of the rollback");
  }
  return plan;
}

/**
 * `operation_confirm`: the arm step of the Tier-3 confirmation flow. It
 * authorizes nothing by itself (Tier 0 in every mode); the exact call that
 * was challenged still has to be sent again. Only a 12-hex fingerprint of the
 * token is audited, never the token.
 */
export function createConfirmTool(deps: ConfirmToolDeps): Tool {
  const { broker } = deps;
  const rollback = broker?.rollback ?? false;
  return defineTool({
    name: "operation_confirm",
    title: "Confirm a Tier-3 operation",
    description:
      "Arm the token returned by a [CONFIRM REQUIRED …] challenge; then re-issue the exact same call to run it " +
      "once. The token expires after the time the challenge named. With rollback pairing enabled by the operator, " +
      "verify_command / rollback_command / verify_expect / auto_rollback bind a check and an undo to the " +
      "operation: they run as the same tool on the same target after it, each admitted by policy again.",
    params: {
      token: { type: "string", description: "the token from the [CONFIRM REQUIRED …] result" },
      verify_command: {
        type: "string",
        description:
          "rollback pairing only: command run after the operation, on the same target; it fails on a non-zero exit, a timeout, or a missing verify_expect",
        default: "",
        noNul: true,
      },
      rollback_command: {
        type: "string",
        description:
          "rollback pairing only: command run once, on the same target, if verify fails and auto_rollback is set",
        default: "",
        noNul: true,
      },
      verify_expect: {
        type: "string",
        description: "rollback pairing only: literal text the verify output must contain",
        default: "",
      },
      auto_rollback: {
        type: "boolean",
        description: "rollback pairing only: run rollback_command when verify fails",
        default: false,
      },
    },
    tier: ZERO,
    annotations: annotationsFor(ZERO, { openWorld: false, idempotent: true }),
    // The arm record names the bound commands, so intent is on the trail before anything runs (ADR 0010).
    ...(rollback ? { auditAction: "confirm_arm" as const } : {}),
    budget: () => 1024,
    policyText: () => "",
    auditArgs: (a) => ({
      token_sha256: tokenFingerprint(a.token),
      ...(rollback
        ? {
            verify_command: a.verify_command,
            rollback_command: a.rollback_command,
            verify_expect: a.verify_expect,
            auto_rollback: a.auto_rollback,
          }
        : {}),
    }),
    // A malformed arm call still carries the token: record its fingerprint, never the token itself.
    auditInvalid: (raw) => {
      const { token, ...rest } = raw;
      return { ...rest, token_sha256: typeof token === "string" ? tokenFingerprint(token) : "" };
    },
    async run(a) {
      if (!broker) return { body: DISABLED };
      const offered = hasFollowUps({
        verifyCommand: a.verify_command,
        rollbackCommand: a.rollback_command,
        verifyExpect: a.verify_expect,
        autoRollback: a.auto_rollback,
      });
      if (offered && !rollback) {
        throw refuse(
          "verify_command, rollback_command, verify_expect and auto_rollback need RELAY_SHELL_CONFIRM_ROLLBACK=true",
        );
      }
      const entry = await broker.inspect(a.token);
      if (!entry) return { body: INVALID };
      const plan = rollback ? followUpPlanOf(a) : null;
      if (plan && !entry.armed) {
        // Checked as the very call that was planned: same tool, same target, deny list first.
        for (const [name, command] of [
          ["verify_command", plan.verifyCommand],
          ["rollback_command", plan.rollbackCommand],
        ] as const) {
          if (command === "") continue;
          const refusal = deps.vetFollowUp(entry.tool, entry.args, command);
          if (refusal !== null) throw refuse(`${name} cannot be bound: ${refusal}`);
        }
      }
      const armed = await broker.arm(a.token, plan);
      switch (armed.kind) {
        case "armed":
          return { body: ARMED };
        case "unknown":
          return { body: INVALID };
        case "conflict":
          throw RelayError.untyped(
            "this token is already armed with other verify/rollback commands; they cannot change after the first arm " +
              "and the token keeps them (plan the call again to bind different ones)",
          );
      }
    },
  });
}
