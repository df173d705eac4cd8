/** Risk tiers of docs/wire-contract.md §5.1. */
export type Tier = 0 | 1 | 2 | 3;

export const TIER_NAMES = {
  0: "READ_ONLY",
  1: "REVERSIBLE",
  2: "STATEFUL",
  3: "IRREVERSIBLE",
} as const satisfies Record<Tier, string>;

export type TierName = (typeof TIER_NAMES)[Tier];

export function tierName(tier: Tier): TierName {
  return TIER_NAMES[tier];
}

export function maxTier(a: Tier, b: Tier): Tier {
  return a >= b ? a : b;
}

export function isTier(value: unknown): value is Tier {
  return value === 0 || value === 1 || value === 2 || value === 3;
}
