import type { ConsentAct } from "../consent/index.js";
import { describeError, fail, ok, type Result } from "../core/index.js";
import type { Tool } from "../runner/index.js";
import { type ActCall, type BindContext, type ConsentActsDeps, Unbindable } from "./consent-bindings.js";

/** The act of a call, or why it cannot be described for a signature. */
export type ActResult = Result<ConsentAct, string>;

/** The act of a validated call of `tool` (its arguments as the tool's parser returned them). */
export type ConsentActs = (tool: string, args: unknown, call: ActCall) => Promise<ActResult>;

/**
 * The act of one call, from the `act` of the tool it calls: the tool, the
 * tier the caller passes in, and the bound arguments, resolved against the
 * live directory, sessions and files the tool itself will use. Each tool whose
 * tier can be above 0 has one; it binds what changes what the act does and
 * leaves out what only changes how long the relay waits or how much output it
 * keeps (`timeout`, `max_output`, `merge_stderr`, a terminal's size at spawn,
 * a fan-out's concurrency, `max_bytes`), so re-issuing a call with a longer
 * timeout is still the approved act. The arguments reach it as the tool's own
 * parser returned them, so they are not checked again here.
 *
 * Never a blank act: a tool without an act, a host that does not resolve, a
 * session or forward the caller cannot use, a file that cannot be read or is
 * over the transfer bounds, each fails with the reason. Never throws.
 */
export function createConsentActs(tools: readonly Tool[], deps: ConsentActsDeps): ConsentActs {
  const acts = new Map(tools.flatMap((t) => (t.act ? [[t.name, t.act] as const] : [])));
  return async (tool, args, call) => {
    const act = acts.get(tool);
    if (act === undefined) {
      return fail(`${tool} has no act describing its consequential arguments`);
    }
    try {
      const ctx: BindContext = { deps, call };
      const bound = await act(args, ctx);
      return ok({ tool, tier: call.tier, bound });
    } catch (err) {
      const reason = err instanceof Unbindable ? err.message : describeError(err).message;
      return fail(`${tool}: ${reason}`);
    }
  };
}
