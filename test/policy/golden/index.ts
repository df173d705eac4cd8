import type { Tier } from "../../../src/core/index.js";
import type { Basis } from "../../../src/policy/index.js";
import { CONFORMANCE_ROWS } from "./conformance.js";
import { EVASION_ROWS } from "./evasion.js";
import { FAMILY_ROWS } from "./families.js";

/**
 * The classifier's golden table: text → tier → basis. A rule change updates
 * it in the same commit. `windows` turns on the PowerShell/cmd rules (the SSH
 * tools). Exported for the benchmark too.
 */
export interface GoldenRow {
  text: string;
  tier: Tier;
  basis: Basis;
  windows?: boolean;
}

export const GOLDEN_ROWS: readonly GoldenRow[] = [...CONFORMANCE_ROWS, ...EVASION_ROWS, ...FAMILY_ROWS];
