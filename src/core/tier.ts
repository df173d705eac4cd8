/** Risk tiers of docs/wire-contract.md §5.1. */
export type Tier = 0 | 1 | 2 | 3;

const TIER_NAMES = {
  0: "READ_ONLY",
  1: "REVERSIBLE",
  2: "STATEFUL",
  3: "IRREVERSIBLE",
} as const satisfies Record<Tier, string>;

export type TierName = (typeof TIER_NAMES)[Tier];

export function tierName(tier: Tier): TierName {
  return TIER_NAMES[tier];
}
