import type { InfraContext, Operations } from "./types.js";

/** Placeholder signature only: probe, dry-run, replicate and verify replace it. */
export function createOperations(ctx: InfraContext): Operations {
  throw new Error(`operations are not built yet (${ctx.stateDir})`);
}
