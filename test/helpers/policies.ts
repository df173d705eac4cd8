import type { EffectivePolicy, PolicyBook } from "../../src/policy/index.js";
import { type CallHost, defineTool, type Tool, type ToolContext } from "../../src/runner/index.js";

/**
 * A book whose hosts are named `<tag><n>`: the tag picks the policy, as an
 * inventory's tags would; any other host gets the default.
 */
export function tagBook(base: EffectivePolicy, tagged: Record<string, Partial<EffectivePolicy>>): PolicyBook {
  const policies = new Map(
    Object.entries(tagged).map(([tag, over]) => [
      tag,
      { ...base, name: `tag:${tag}`, source: "policy.toml", ...over },
    ]),
  );
  return {
    default: base,
    forHost: (ref) => policies.get((ref.alias ?? "").replace(/\d+$/, "")) ?? base,
    all: () => [base, ...policies.values()],
  };
}

/** The host a test fan-out names: its alias is its name. */
export function aliasHost(name: string): CallHost {
  return { name, ref: { alias: name, hostname: `${name}.test`, port: 22 } };
}

/**
 * A fan-out for the runner's tests: `command` on the comma-separated `hosts`, classified like the
 * remote-command tools (a command proven to only read is Tier 0). It runs nothing: `run` is told
 * the hosts the runner let through.
 */
export function testFanout(options: {
  hosts?: (hosts: string) => CallHost[];
  run?: (ran: string[], ctx: ToolContext) => void;
}): Tool {
  const hostsOf = options.hosts ?? ((hosts: string) => hosts.split(",").map(aliasHost));
  return defineTool({
    name: "fleet",
    title: "fleet",
    description: "a fan-out that runs nothing",
    params: {
      command: { type: "string", description: "command" },
      hosts: { type: "string", description: "hosts" },
    },
    tier: { kind: "heuristic", floor: 0, windows: false },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    budget: () => 4096,
    policyText: (a) => a.command,
    auditArgs: (a) => ({ command: a.command, hosts: a.hosts }),
    hosts: (a) => hostsOf(a.hosts),
    async run(a, ctx) {
      options.run?.(
        a.hosts.split(",").filter((h) => !ctx.hostRefusals?.has(h)),
        ctx,
      );
      return { body: "ran", exitCode: 0 };
    },
  });
}
